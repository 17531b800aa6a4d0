"""matmul_mknk_2dgrid_splitn against a float64 reference over the entry's validated shapes, on
grids whose N bands are even, uneven and partly empty."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_mknk_2dgrid_splitn.kernel import matmul_mknk_2dgrid_splitn, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]
GRIDS = [(1, 2), (2, 3)]  # (2, 3) on 2..5 N tiles: uneven bands, the last one empty at 4


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_mknk_2dgrid_splitn(case, grid):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    y = s.strided((n, k), s.dtype_of(dtype), seed=2, scale=k**-0.5)  # O(1) z at any K
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_mknk_2dgrid_splitn(x, y, out, grid=grid)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        matmul_mknk_2dgrid_splitn(x, torch.zeros((4, 7)))
    with pytest.raises(ValueError, match="grid: expected"):
        matmul_mknk_2dgrid_splitn(x, x, grid=(0, 2))
    with pytest.raises(ValueError, match="out: expected float32"):
        matmul_mknk_2dgrid_splitn(x, x, out=torch.zeros((4, 5)))
