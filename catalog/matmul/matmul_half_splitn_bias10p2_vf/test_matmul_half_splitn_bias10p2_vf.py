"""matmul_half_splitn_bias10p2_vf against float64 x @ y + 10.2 over the entry's validated shapes;
the float16 output must be within one rounding of the exact value."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_half_splitn_bias10p2_vf.kernel import (
    matmul_half_splitn_bias10p2_vf, reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_half_splitn_bias10p2_vf(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    y = s.strided((n, k), s.dtype_of(dtype), seed=2, scale=k**-0.5).T  # [K, N], O(1) z
    out = s.poisoned((m, n), torch.float16)
    with s.on_backend(backend):
        matmul_half_splitn_bias10p2_vf(x, y, out)
    want = reference(x, y)
    s.assert_close("z", out, want, TOL)
    s.check_untouched(out)
    # Within one float16 rounding (half an ulp) of the exact value, plus float32 accumulation's
    # error, bounded by K·2^-24·(|x| @ |y|) (it matters where the sum cancels).
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    accumulation = k * 2.0**-24 * (np.abs(s.f64(x)) @ np.abs(s.f64(y)))
    assert (np.abs(s.f64(out) - want) <= 0.5 * ulp + accumulation).all()


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8), dtype=torch.float16)
    with pytest.raises(ValueError, match=r"y: expected \[8, N\]"):
        matmul_half_splitn_bias10p2_vf(x, x)
    with pytest.raises(ValueError, match="out: expected float16"):
        matmul_half_splitn_bias10p2_vf(x, x.T, out=torch.zeros((4, 4)))
