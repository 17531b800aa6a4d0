"""matmul_kmkn_blockwise_quant128 against float64 blockwise scales and e5m2 rounding over the
entry's validated shapes, with an all-zero block (scale 0, codes 0) and a short last block."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_kmkn_blockwise_quant128.kernel import (
    BLOCK, e5m2_decode, matmul_kmkn_blockwise_quant128, reference, to_e5m2)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]
POISON = 0xFF  # an e5m2 NaN code


def test_e5m2_rounding_on_known_values():
    v = [1.1, 1.125, 1.375, 224.0, 200.0, -0.3, 3.0 * 2.0**-17, 0.0]
    want = [1.0, 1.0, 1.5, 224.0, 192.0, -0.3125, 2.0**-15, 0.0]
    np.testing.assert_array_equal(to_e5m2(v), want)
    assert e5m2_decode([0x3C, 0x5B, 0xBC, 0x01]).tolist() == [1.0, 224.0, -1.0, 2.0**-16]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_kmkn_blockwise_quant128(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1).T  # [K, M], a transposed view
    y = s.strided((k, n), s.dtype_of(dtype), seed=2)
    x[:, 2] = 0  # row 2 of z: every block all zero
    blocks = math.ceil(n / BLOCK)
    codes = torch.full((m, n + 5), POISON, dtype=torch.uint8)[:, :n]
    scales = s.poisoned((m, blocks))
    with s.on_backend(backend):
        matmul_kmkn_blockwise_quant128(x, y, codes, scales)
    values, want_scales = reference(x, y)
    s.assert_close("scales", scales, want_scales, TOL["scales"])
    s.check_untouched(scales)
    assert bool((codes._base[:, n:] == POISON).all()), "the kernel wrote past the codes' rows"
    got = e5m2_decode(codes.numpy())
    assert np.isfinite(got).all(), "non-finite codes"
    assert bool((codes[2] == 0).all()) and bool((scales[2] == 0).all())
    # Each code is the e5m2 rounding of z / scale. float32's z carries an error relative to the
    # block's range (224 after scaling), which may move a value across a rounding midpoint: a
    # neighbour is accepted there, within that error.
    step = np.ldexp(1.0, np.maximum(np.frexp(np.abs(values))[1] - 1, -14) - 2)
    assert (np.abs(got - values) <= 0.5 * step + TOL["codes"] * (np.abs(values) + 224)).all()
    assert np.mean(got != to_e5m2(values)) < 0.01


def test_rejects_bad_arguments():
    x = torch.zeros((8, 4))
    with pytest.raises(ValueError, match=r"y: expected \[8, N\]"):
        matmul_kmkn_blockwise_quant128(x, torch.zeros((7, 4)))
    with pytest.raises(ValueError, match="codes: expected torch.uint8"):
        matmul_kmkn_blockwise_quant128(x, x, codes=torch.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"scales: expected float32 \[4, 1\]"):
        matmul_kmkn_blockwise_quant128(x, x, scales=torch.zeros((4, 2)))
