"""matmul_kmkn_fp32_out against a float64 reference over the entry's validated shapes."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_kmkn_fp32_out.kernel import matmul_kmkn_fp32_out, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_kmkn_fp32_out(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1).T  # [K, M], a transposed view (K contiguous)
    y = s.strided((k, n), s.dtype_of(dtype), seed=2, scale=k**-0.5)  # O(1) z at any K
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_kmkn_fp32_out(x, y, out)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    x = torch.zeros((8, 4))
    with pytest.raises(ValueError, match=r"y: expected \[8, N\]"):
        matmul_kmkn_fp32_out(x, torch.zeros((7, 4)))
    with pytest.raises(TypeError, match="x, y: expected"):
        matmul_kmkn_fp32_out(x, torch.zeros((8, 4), dtype=torch.float16))
    with pytest.raises(ValueError, match="out: expected float32"):
        matmul_kmkn_fp32_out(x, x, out=torch.zeros((4, 5)))
