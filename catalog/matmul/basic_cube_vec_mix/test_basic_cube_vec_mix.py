"""basic_cube_vec_mix against float64 |x @ y^T| + 1 over the entry's validated shapes."""

import pytest
import torch

from catalog import _support as s
from catalog.matmul.basic_cube_vec_mix.kernel import basic_cube_vec_mix, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_basic_cube_vec_mix(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1, kind="pad")
    y = s.strided((k, n), s.dtype_of(dtype), seed=2, scale=k**-0.5).T  # column-major, O(1) z
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        basic_cube_vec_mix(x, y, out)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        basic_cube_vec_mix(x, torch.zeros((4, 7)))
    with pytest.raises(TypeError, match="x, y: expected"):
        basic_cube_vec_mix(x, x.half())
    with pytest.raises(ValueError, match="out: expected float32"):
        basic_cube_vec_mix(x, x, out=torch.zeros((4, 5)))
