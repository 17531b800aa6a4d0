"""vec_cube_vec_scale2_abs_add1_matmul against numpy (2x rounded to float16, then float64) over
the entry's validated shapes; a reference without the float16 rounding must not pass."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.vec_cube_vec_scale2_abs_add1_matmul.kernel import (
    reference, vec_cube_vec_scale2_abs_add1_matmul)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_vec_cube_vec_scale2_abs_add1_matmul(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    y = s.strided((n, k), s.dtype_of(dtype), seed=2, scale=k**-0.5)  # O(1) z at any K
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        vec_cube_vec_scale2_abs_add1_matmul(x, y, out)
    s.assert_close("z", out, reference(x, y), TOL)
    s.check_untouched(out)
    assert bool((out >= 1).all())
    unrounded = np.abs((2 * s.f64(x)) @ s.f64(y).T) + 1
    assert not np.allclose(s.f64(out), unrounded, rtol=TOL, atol=TOL)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        vec_cube_vec_scale2_abs_add1_matmul(x, torch.zeros((4, 7)))
    with pytest.raises(ValueError, match="out: expected float32"):
        vec_cube_vec_scale2_abs_add1_matmul(x, x, out=torch.zeros((4, 5)))
