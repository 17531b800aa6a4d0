"""matmul_mknk_2dgrid_splitk_add1 against a float64 reference over the entry's validated shapes,
with K slices that are even, uneven and (more slices than K tiles) empty: +1 exactly once."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_mknk_2dgrid_splitk_add1.kernel import (
    matmul_mknk_2dgrid_splitk_add1, reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("split_k", [1, 3, 8])
@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_mknk_2dgrid_splitk_add1(case, split_k):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    y = s.strided((n, k), s.dtype_of(dtype), seed=2, scale=k**-0.5)  # O(1) z at any K
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_mknk_2dgrid_splitk_add1(x, y, out, split_k=split_k)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        matmul_mknk_2dgrid_splitk_add1(x, torch.zeros((4, 7)))
    with pytest.raises(ValueError, match="split_k: expected"):
        matmul_mknk_2dgrid_splitk_add1(x, x, split_k=0)
    with pytest.raises(TypeError, match="x, y: expected"):
        matmul_mknk_2dgrid_splitk_add1(x, x.int())
