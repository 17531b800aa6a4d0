"""Specialisation keys and kernel files (issue #35, items 9 and 10): ConstExpr values are keyed
exactly and unambiguously (strings that once shared a key, numbers of different types, arrays
refused), and a kernel's name never escapes its dump directory."""

import enum
import os

import numpy as np
import pytest
import torch

from tileops import tl

SEEN = []  # the ConstExpr values each trace saw


@tl.jit(backend="interp")
def pair(y: tl.GlobalAddress, a: tl.ConstExpr, b: tl.ConstExpr):
    SEEN.append((a, b))
    tl.store(tl.full([1], float(len(str(a)) * 100 + len(str(b))), tl.float32), tl.tensor(y, [1]),
             offsets=[0])


def launch(a, b):
    y = np.zeros(1, np.float32)
    pair[1](y, a, b)
    return float(y[0])


def test_constexpr_strings_do_not_collide():
    # Once both keyed as "c:'str:x'|c:'str:y'|c:'str:z'|": the second reused the first trace.
    assert launch("x'|c:'str:y", "z") == 1101.0
    assert launch("x", "y'|c:'str:z") == 111.0


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


def test_constexpr_values_are_keyed_exactly():
    SEEN.clear()
    values = [1, 1.0, True, "1", np.float32(1), np.float64(1), np.int32(1), (1,), [1], None,
              -0.0, 0.0, float("inf"), 2**70, tl.float32, tl.float16, np.dtype("float32"),
              torch.float32, Colour.RED, Colour.BLUE, (1, (2, "3")), (1, 2, "3"), 1 + 2j]
    for v in values:
        launch(v, "")
    # Each traced once, with its own value (type included): none reused another's trace.
    assert [repr(a) for a, _ in SEEN] == [repr(v) for v in values]
    for v in values:
        launch(v, "")
    assert len(SEEN) == len(values)


@pytest.mark.parametrize("value", [np.zeros(2000), np.zeros(2000) + 1e-9, torch.zeros(3),
                                   {"a": 1}, {1, 2}, object(), (1, np.zeros(3)), b"bytes"])
def test_constexpr_without_an_exact_key_is_refused(value):
    with pytest.raises(TypeError, match=r"pair: argument 'b': a ConstExpr must be"):
        launch(1, value)


def test_large_arrays_with_equal_reprs_were_one_key():
    # Their reprs are equal ('...' elides the differing element): refused now, not confused.
    a, b = np.zeros(2000), np.zeros(2000)
    b[1000] = 1
    assert repr(a) == repr(b)
    with pytest.raises(TypeError):
        launch(a, 1)


def test_kernel_name_is_not_a_path(tmp_path):
    dump = tmp_path / "a" / "b" / "dump"

    def body(y: tl.GlobalAddress):
        tl.store(tl.full([1], 3.0, tl.float32), tl.tensor(y, [1]), offsets=[0])

    body.__name__ = "../../escaped"
    kernel = tl.jit(backend="interp", dump_dir=str(dump))(body)
    y = np.zeros(1, np.float32)
    kernel[1](y)
    assert y[0] == 3.0
    found = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    assert found and all(os.path.dirname(f) == str(dump) for f in found), found
