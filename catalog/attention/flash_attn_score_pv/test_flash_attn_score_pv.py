"""flash_attn_score_pv against float64 per-tile P·V under the running max (p rounded to
float16 in the reference too)."""

import math

import pytest
import torch

from catalog import _support as s
from catalog.attention.flash_attn_score_pv.kernel import TILE_N, flash_attn_score_pv, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["pv"]


def run_and_check(backend, q, k, v, scale):
    bh, s1, d = q.shape
    pv = s.poisoned((bh, -(-k.shape[1] // TILE_N), s1, d))
    with s.on_backend(backend):
        flash_attn_score_pv(q, k, v, scale, out=pv)
    s.assert_close("pv", pv, reference(q, k, v, scale), TOL)
    s.check_untouched(pv)


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_score_pv(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    v = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=3)
    run_and_check(backend, q, k, v, 0.125)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_a_later_max_scales_down_only_later_tiles(backend):
    # Keys of tile 1 score 8 above those of tile 0: tile 0's slice is normalised by its own
    # max (p = 1), tile 1's by the new one; a final-max kernel would scale tile 0 by exp(-8).
    s2, d = 2 * TILE_N, 16
    q = torch.zeros((1, 3, d))
    q[0, :, 0] = 1.0
    k = torch.zeros((1, s2, d))
    k[0, TILE_N:, 0] = 8.0
    v = torch.ones((1, s2, d))
    bh, s1, _ = q.shape
    pv = s.poisoned((bh, 2, s1, d))
    with s.on_backend(backend):
        flash_attn_score_pv(q, k, v, 1.0, out=pv)
    assert torch.allclose(pv, torch.full_like(pv, float(TILE_N)), rtol=1e-6)
    run_and_check(backend, q, k, v, 1.0)


def test_rejects_an_output_of_the_wrong_tile_count():
    q, k, v = (s.strided((2, n, 16), s.dtype_of("float16"), seed)
               for seed, n in ((1, 8), (2, 130), (3, 130)))
    with pytest.raises(ValueError, match=r"out: expected float32 \[2, 2, 8, 16\]"):
        flash_attn_score_pv(q, k, v, out=s.poisoned((2, 1, 8, 16)))
    assert math.isfinite(float(flash_attn_score_pv(q, k, v).sum()))
