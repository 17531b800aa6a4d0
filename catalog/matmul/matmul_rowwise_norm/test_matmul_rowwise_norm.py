"""matmul_rowwise_norm against float64 z / rowsum(z) over the entry's validated shapes. Inputs
are |normal| values, so row sums are far from 0 and the division well conditioned."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_rowwise_norm.kernel import matmul_rowwise_norm, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_rowwise_norm(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1).abs_()
    y = s.strided((n, k), s.dtype_of(dtype), seed=2).abs_()
    y[::3] *= -0.5  # mixed signs per column; the row sums stay positive
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_rowwise_norm(x, y, out)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected N in 1..256"):
        matmul_rowwise_norm(x, torch.zeros((257, 8)))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        matmul_rowwise_norm(x, torch.zeros((4, 7)))
    with pytest.raises(ValueError, match="out: expected float32"):
        matmul_rowwise_norm(x, x, out=torch.zeros((4, 5)))
