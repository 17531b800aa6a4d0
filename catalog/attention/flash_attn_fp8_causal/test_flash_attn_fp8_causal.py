"""flash_attn_fp8_causal against float64 causal online attention on the decoded e5m2 inputs,
with the e5m2 value path replayed in numpy; future K/V tiles are never read."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.attention.flash_attn_fp8_causal.kernel import (TILE_N, e5m2_decode, e5m2_encode,
                                                            flash_attn_fp8_causal, reference,
                                                            to_e5m2)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


def codes(shape, seed, kind="pad"):
    return s.coded(shape, lambda x: e5m2_encode(to_e5m2(x)), seed, kind=kind)


def run_and_check(backend, q, k, v, visible=None):
    s.check_row_stats_kernel(flash_attn_fp8_causal, reference, TOL, backend, q, k, v, visible)


def test_e5m2_reference_helpers():
    # Every finite code decodes to a value that rounds to itself and encodes back to the code.
    all_codes = np.arange(256, dtype=np.uint8)
    values = e5m2_decode(all_codes)
    finite = np.isfinite(values)
    np.testing.assert_array_equal(to_e5m2(values[finite]), values[finite])
    np.testing.assert_array_equal(e5m2_encode(values[finite]), all_codes[finite])
    x = [1.1, 1.125, 1.375, 3.0 * 2.0 ** -17, 2.0 ** -17, 57344.0, 61439.0, 61440.0, -0.3]
    want = [1.0, 1.0, 1.5, 2.0 ** -15, 0.0, 57344.0, 57344.0, np.inf, -0.3125]
    np.testing.assert_array_equal(to_e5m2(x), want)


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_fp8_causal(case):
    backend, (b, h, s1, s2, d), _ = case
    q = codes((b * h, s1, d), seed=1, kind="swap")
    k = codes((b * h, s2, d), seed=2)
    v = codes((b * h, s2, d), seed=3)
    run_and_check(backend, q, k, v)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_future_tiles_are_skipped(backend):
    # S1 = 70: no query sees a key of tile 1 or later; they hold NaN codes (0x7F), which a
    # masked-but-computed tile would carry into P·V (0 · NaN).
    s1, s2, d = 70, 3 * TILE_N, 32
    q, k, v = codes((2, s1, d), seed=1), codes((2, s2, d), seed=2), codes((2, s2, d), seed=3)
    k[:, TILE_N:] = 0x7F
    v[:, TILE_N:] = 0x7F
    run_and_check(backend, q, k, v, visible=TILE_N)


def test_rejects_float_inputs():
    q = s.strided((1, 4, 16), s.dtype_of("float16"), seed=1)
    with pytest.raises(TypeError, match="q: expected torch.uint8 storage of float8_e5m2"):
        flash_attn_fp8_causal(q, q, q)
    c = codes((1, 4, 16), seed=1)
    with pytest.raises(ValueError, match=r"v: expected \[1, S2, 16\]"):
        flash_attn_fp8_causal(c, c, torch.zeros((1, 4, 8), dtype=torch.uint8))
