"""flash_attn_block32_causal against float64 block-causal attention; fully future K/V tiles
are never read (NaN there leaves the result finite)."""

import math

import pytest

from catalog import _support as s
from catalog.attention.flash_attn_block32_causal.kernel import (TILE_N, flash_attn_block32_causal,
                                                                reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


def run_and_check(backend, q, k, v, visible=None):
    s.check_row_stats_kernel(flash_attn_block32_causal, reference, TOL, backend, q, k, v, visible)


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_block32_causal(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    v = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=3)
    run_and_check(backend, q, k, v)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_future_tiles_are_skipped(backend):
    # S1 = 70: the last query (69) sees keys < 96, so tile 0 is the only K/V tile any query
    # needs; every later tile holds NaN, which a masked-but-computed tile would carry into
    # P·V (0 · NaN).
    s1, s2, d = 70, 4 * TILE_N, 32
    q = s.strided((2, s1, d), s.dtype_of("float16"), seed=1)
    k = s.strided((2, s2, d), s.dtype_of("float16"), seed=2)
    v = s.strided((2, s2, d), s.dtype_of("float16"), seed=3)
    k[:, TILE_N:] = math.nan
    v[:, TILE_N:] = math.nan
    run_and_check(backend, q, k, v, visible=TILE_N)


def test_rejects_empty_keys():
    q = s.strided((1, 4, 16), s.dtype_of("float32"), seed=1)
    k = s.strided((1, 0, 16), s.dtype_of("float32"), seed=2)
    with pytest.raises(ValueError, match="S2 must be at least 1"):
        flash_attn_block32_causal(q, k, k)
