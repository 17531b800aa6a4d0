"""cast_fp8_pack4_dual against numpy fp8 code references (written from the formats'
definitions), with ties, subnormals, overflow, NaN/Inf, -0.0 and C not a multiple of 4."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.formats.cast_fp8_pack4_dual.kernel import (cast_fp8_pack4_dual, e4m3_codes,
                                                        e5m2_codes, reference)

ENTRY = s.load_entry(__file__)


def test_code_references_on_known_values():
    x = np.array([1.0, -2.0, 448.0, 500.0, 1e6, 2.0**-9, 2.0**-16, 0.0, -0.0, 1.125, 1.375])
    assert e4m3_codes(x).tolist() == [0x38, 0xC0, 0x7E, 0x7E, 0x7E, 0x01, 0x00, 0x00, 0x80,
                                      0x39, 0x3B]  # 1.125 and 1.375 on the grid
    assert e5m2_codes(x).tolist() == [0x3C, 0xC0, 0x5F, 0x60, 0x7C, 0x18, 0x01, 0x00, 0x80,
                                      0x3C, 0x3E]  # 1.125 ties to 1.0, 1.375 to 1.5


def _inputs(r, c, seed):
    x = s.strided((r, c), torch.float32, seed, scale=4.0)
    gen = torch.Generator().manual_seed(seed)
    x.mul_(torch.exp2(torch.randint(-14, 12, (r, c), generator=gen).float()))
    edge = [1.125, 1.375, -1.125, 2.0**-17, 3 * 2.0**-17, 2.0**-10, 57344.0, 61440.0, 6e4, 464.0,
            449.0, -1e9, math.inf, -math.inf, -0.0, 0.0, 1.0625, 0.0029296875, math.nan]
    for k, v in enumerate(edge[:r * c]):
        x[k // c, k % c] = v
    return x


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_cast_fp8_pack4_dual(case):
    backend, (r, c), _ = case
    x = _inputs(r, c, seed=r * c)
    w = (c + 3) // 4
    outs = [torch.full((r, w + 3), -7, dtype=torch.int32)[:, :w] for _ in range(2)]
    with s.on_backend(backend):
        cast_fp8_pack4_dual(x, *outs)
    for name, got, want in zip(("out_e5m2", "out_e4m3"), outs, reference(x)):
        got_codes = got.contiguous().numpy().view(np.uint8).reshape(r, 4 * w)
        want_codes = want.view(np.uint8).reshape(r, 4 * w)
        nan = np.isnan(np.pad(x.double().numpy(), ((0, 0), (0, 4 * w - c))))
        # A NaN's code is any NaN code of the format (e5m2 has several): compare the rest.
        np.testing.assert_array_equal(got_codes[~nan], want_codes[~nan], err_msg=name)
        if name == "out_e4m3":
            assert ((got_codes[nan] & 0x7F) == 0x7F).all(), name
        else:
            assert ((got_codes[nan] & 0x7C) == 0x7C).all() and (got_codes[nan] & 3).all(), name
        assert (got._base[:, w:] == -7).all(), f"{name}: the kernel wrote past its rows"


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="x: expected float32"):
        cast_fp8_pack4_dual(torch.zeros((2, 4), dtype=torch.float64))
    with pytest.raises(ValueError, match="out_e4m3: expected int32 \\[2, 2\\]"):
        cast_fp8_pack4_dual(torch.zeros((2, 5)), out_e4m3=torch.zeros((2, 1), dtype=torch.int32))
