"""matmul_float_mmad against a float64 reference over the entry's validated shapes."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_float_mmad.kernel import matmul_float_mmad, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_float_mmad(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    y = s.strided((k, n), s.dtype_of(dtype), seed=2, scale=k**-0.5).T  # column-major, O(1) z
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_float_mmad(x, y, out)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        matmul_float_mmad(x, torch.zeros((4, 7)))
    with pytest.raises(TypeError, match="x, y: expected"):
        matmul_float_mmad(x, torch.zeros((4, 8), dtype=torch.float16))
    with pytest.raises(ValueError, match="out: expected float32"):
        matmul_float_mmad(x, x, out=torch.zeros((4, 5)))
