"""cube_vec_atomic_add_two_outputs: integer-valued inputs make every float32 sum exact in any
order, so the accumulated totals must equal the float64 reference exactly (a lost or doubled
atomic update shows); a random-valued run checks the tolerance path."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.cube_vec_atomic_add_two_outputs.kernel import (
    cube_vec_atomic_add_two_outputs, reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


def _integers(shape, seed, low=-3, high=4):
    """Small integers (exact in every dtype) in strided()'s layout."""
    view = s.strided(shape, torch.float32, seed)
    gen = torch.Generator().manual_seed(seed)
    view.copy_(torch.randint(low, high, shape, generator=gen).float())
    return view


def _accumulators(m, n):
    """Two NaN-padded [M, N] views (check_untouched) holding integer starting values."""
    outs = []
    for seed in (5, 6):
        out = s.poisoned((m, n))
        out.copy_(torch.randint(-50, 50, (m, n), generator=torch.Generator().manual_seed(seed)))
        outs.append(out)
    return outs


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_exact_totals(case):
    backend, (b, m, n, k), dtype = case
    x = _integers((b, m, k), seed=1)
    y = _integers((b, n, k), seed=2)
    out_c, out_v = _accumulators(m, n)
    want = reference(x, y, s.f64(out_c), s.f64(out_v))
    with s.on_backend(backend):
        cube_vec_atomic_add_two_outputs(x, y, out_c, out_v)
    for name, got, w in zip(("out_c", "out_v"), (out_c, out_v), want):
        np.testing.assert_array_equal(s.f64(got), w, err_msg=name)
        s.check_untouched(got)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_random_values(backend):
    b, m, n, k = ENTRY["validated"]["shapes"]["interp"][0]
    x = s.strided((b, m, k), torch.float32, seed=3, kind="swap")
    y = s.strided((b, n, k), torch.float32, seed=4)
    out_c, out_v = _accumulators(m, n)
    want = reference(x, y, s.f64(out_c), s.f64(out_v))
    with s.on_backend(backend):
        cube_vec_atomic_add_two_outputs(x, y, out_c, out_v)
    for name, got, w in zip(("out_c", "out_v"), (out_c, out_v), want):
        s.assert_close(name, got, w, TOL[name])


def test_rejects_bad_arguments():
    x = torch.zeros((2, 4, 8))
    c = torch.zeros((4, 4))
    with pytest.raises(ValueError, match=r"y: expected \[2, N, 8\]"):
        cube_vec_atomic_add_two_outputs(x, torch.zeros((3, 4, 8)), c, c)
    with pytest.raises(ValueError, match="out_v: expected a float32"):
        cube_vec_atomic_add_two_outputs(x, x, c, torch.zeros((4, 4), dtype=torch.float16))
