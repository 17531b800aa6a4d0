"""to_hif8 against a float64 numpy HiF8 rounding written from CATALOG.md, on every exponent,
ties, subnormals, the overflow edge and NaN/Inf; both overflow variants."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.formats.to_hif8.kernel import FLT_MAX, reference, to_hif8

ENTRY = s.load_entry(__file__)


def _inputs(r, c, seed):
    x = s.strided((r, c), torch.float32, seed)
    gen = torch.Generator().manual_seed(seed)
    x.mul_(torch.exp2(torch.randint(-30, 20, (r, c), generator=gen).float()))  # every E
    edge = [1.07, 18.0, 320.0, 40959.0, 40960.0, -40960.0, 1.0625, -1.0625, 1e-45, 2.0**-23,
            2.0**-24, 3.0 * 2.0**-24, math.nan, math.inf, -math.inf, -0.0, 32768.0, 40000.0]
    for k, v in enumerate(edge[:r * c]):  # x is a strided view: element by element
        x[k // c, k % c] = v
    return x


def test_reference_on_the_contract_examples():
    got = reference(np.array([1.07, 18.0, 320.0, 40959.0, 1.0625, 50000.0]))
    assert got.tolist() == [1.125, 20.0, 384.0, 32768.0, 1.125, FLT_MAX]
    assert reference(np.array([50000.0]), saturate=False).tolist() == [math.inf]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
@pytest.mark.parametrize("saturate", [True, False])
def test_to_hif8(case, saturate):
    backend, (r, c), _ = case
    x = _inputs(r, c, seed=r + c)
    y = s.poisoned((r, c))
    with s.on_backend(backend):
        to_hif8(x, saturate, out=y)
    want = reference(x, saturate).astype(np.float32)
    np.testing.assert_array_equal(y.numpy(), want)
    s.check_untouched(y)
    # Below the overflow edge the grid is the hifloat8 dtype's: decode(encode(x)) agrees.
    from tileops import ops
    small = x.abs() < 40960
    codes = ops.cast(x.contiguous(), dtype="hifloat8")
    back = ops.cast(codes, torch.empty((r, c)), input_dtype="hifloat8")
    np.testing.assert_array_equal(y[small].numpy(), back[small].numpy())


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="x: expected float32"):
        to_hif8(torch.zeros((2, 2), dtype=torch.float16))
    with pytest.raises(TypeError, match="saturate: expected a bool"):
        to_hif8(torch.zeros((2, 2)), saturate=1)
    with pytest.raises(ValueError, match="out: expected float32"):
        to_hif8(torch.zeros((2, 2)), out=torch.zeros((2, 3)))
