"""The AST front-end of @tl.jit (tileops/_frontend.py), its errors: constructs that cannot be
lowered fail naming the line, never silently changing meaning; kernels without source.
Kernels that run do so on both backends (interp, the reference, and cpu) against numpy."""

import numpy as np
import pytest

from tileops import tl

GA = tl.GlobalAddress
BACKENDS = ("interp", "cpu")


def on(backend, fn):
    return tl.jit(backend=backend)(fn)


def changes_type(y: GA, n: int):
    acc = 0.0
    for t in tl.range(n):
        acc = acc + tl.full([4], 1.0, tl.float32)
    tl.store(acc, tl.tensor(y, [4]), offsets=[0])


def first_assigned_in_loop(y: GA, n: int):
    for t in tl.range(n):
        last = tl.full([4], 1.0, tl.float32)
    tl.store(last, tl.tensor(y, [4]), offsets=[0])


def one_branch_only(y: GA, flag: int):
    if flag > 0:
        z = tl.full([4], 1.0, tl.float32)
    tl.store(z, tl.tensor(y, [4]), offsets=[0])


def runtime_while(y: GA, n: int):
    i = 0
    while i < n:
        i = i + 1


def tile_condition(x: GA, n: int):
    v = tl.load(tl.tensor(x, [4]), [4], offsets=[0])
    if v > 0.0:
        pass


def carries_a_list(y: GA, n: int):
    parts = []
    for t in tl.range(n):
        parts = parts + [t]


def early_return(y: GA, flag: int):
    if flag > 0:
        tl.store(tl.full([4], 1.0, tl.float32), tl.tensor(y, [4]), offsets=[0])
        return
    tl.store(tl.full([4], 2.0, tl.float32), tl.tensor(y, [4]), offsets=[0])


# covers: trace_errors
@pytest.mark.parametrize("fn,exc,words", [
    (early_return, ValueError, ["'return' inside a runtime if"]),
    (changes_type, ValueError, ["'acc' changes type", "tl.full", "test_tl_frontend_errors.py:"]),
    (first_assigned_in_loop, ValueError, ["'last' is first assigned", "may run zero times"]),
    (one_branch_only, ValueError, ["'z' is assigned in only one branch"]),
    (runtime_while, TypeError, ["runtime while loops are not supported"]),
    (tile_condition, TypeError, ["a runtime if needs a scalar"]),
    (carries_a_list, ValueError, ["'parts' holds a list"]),
])
def test_constructs_that_cannot_be_lowered_are_errors_naming_the_line(fn, exc, words):
    y = np.zeros(4, np.float32)
    with pytest.raises(exc) as info:
        on("interp", fn)[1](y, 3)
    for w in words:
        assert w in str(info.value), str(info.value)
    assert f"{__file__.rsplit('/', 1)[-1]}:" in str(info.value)


SOURCE_LESS = '''
def kernel(x: GA, y: GA, n: int):
    tx, ty = tl.tensor(x, [n * 4]), tl.tensor(y, [n * 4])
    acc = tl.zeros([4], tl.float32)
    for t in tl.range(n):
        acc = acc + tl.load(tx, [4], offsets=[t * 4])
        tl.store(acc, ty, offsets=[t * 4])
'''

SOURCE_LESS_VAR = '''
def kernel(x: GA, y: GA, n: int):
    tx, ty = tl.tensor(x, [n * 4]), tl.tensor(y, [n * 4])
    acc = tl.Var(tl.zeros([4], tl.float32))
    for t in tl.range(n):
        acc += tl.load(tx, [4], offsets=[t * 4])
        tl.store(acc, ty, offsets=[t * 4])
'''


# covers: no_source
@pytest.mark.parametrize("backend", BACKENDS)
def test_kernels_without_source_refuse_rebinding_and_run_vars(backend):
    scope = {"tl": tl, "GA": GA}
    exec(compile(SOURCE_LESS, "<cell>", "exec"), scope)  # noqa: S102 - a REPL-like kernel
    x = np.arange(12, dtype=np.float32)
    y = np.full(12, np.nan, np.float32)
    with pytest.raises(ValueError, match="'acc' is bound before this loop and rebound"):
        on(backend, scope["kernel"])[1](x, y, 3)
    exec(compile(SOURCE_LESS_VAR, "<cell>", "exec"), scope)  # noqa: S102
    on(backend, scope["kernel"])[1](x, y, 3)
    np.testing.assert_array_equal(y, np.cumsum(x.reshape(3, 4), axis=0).ravel())


def plain_helper(acc, tx, n):
    for t in tl.range(n):  # not a kernel: not rewritten, so the loop guards its names
        acc = acc + tl.load(tx, [4], offsets=[t * 4])
    return acc


def calls_plain_helper(x: GA, y: GA, n: int):
    acc = plain_helper(tl.zeros([4], tl.float32), tl.tensor(x, [n * 4]), n)
    tl.store(acc, tl.tensor(y, [4]), offsets=[0])


# covers: no_source trace_errors
def test_plain_helpers_that_rebind_in_runtime_loops_are_errors():
    x, y = np.zeros(12, np.float32), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="plain helper function"):
        on("interp", calls_plain_helper)[1](x, y, 3)


