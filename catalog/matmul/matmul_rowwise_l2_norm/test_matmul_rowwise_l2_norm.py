"""matmul_rowwise_l2_norm against float64 z / ||z|| per row over the entry's validated shapes
(rows of several N tiles, K tails), with an all-zero row that must come out 0."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_rowwise_l2_norm.kernel import matmul_rowwise_l2_norm, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_rowwise_l2_norm(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    x[m // 2] = 0  # z's row is all zero: defined as 0
    w = s.strided((n, k), s.dtype_of(dtype), seed=2, scale=10.0)
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_rowwise_l2_norm(x, w, out)
    s.assert_close("z", out, reference(x, w), TOL)
    s.check_untouched(out)
    assert bool((out[m // 2] == 0).all())


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"w: expected \[N, 8\]"):
        matmul_rowwise_l2_norm(x, torch.zeros((4, 7)))
    with pytest.raises(TypeError, match="x, w: expected"):
        matmul_rowwise_l2_norm(x, x.double())
    with pytest.raises(ValueError, match="out: expected float32"):
        matmul_rowwise_l2_norm(x, x, out=torch.zeros((4, 4), dtype=torch.float16))
