"""flash_attn_score_iter against float64 numerators under the blockwise running max."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.attention.flash_attn_score_iter.kernel import (BLOCK_N, flash_attn_score_iter,
                                                            reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["p"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_score_iter(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    p = s.poisoned((b * h, s1, s2), torch.float16)
    with s.on_backend(backend):
        flash_attn_score_iter(q, k, 0.1, out=p)
    s.assert_close("p", p, reference(q, k, 0.1), TOL)
    s.check_untouched(p)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_the_max_runs_forward_only(backend):
    # Row 0's larger score comes in block 1, row 1's in block 0. A max over all blocks would
    # scale row 0's block 0 below 1; a max per block would lift row 1's block 1 to 1.
    s2, d = 2 * BLOCK_N + 5, 16
    q = torch.zeros((1, 2, d))
    q[0, 0, 0] = q[0, 1, 1] = 1.0
    k = torch.zeros((1, s2, d))
    k[0, 3, :2] = torch.tensor([1.0, 3.0])
    k[0, BLOCK_N + 7, :2] = torch.tensor([3.0, 1.0])
    p = s.poisoned((1, 2, s2), torch.float16)
    with s.on_backend(backend):
        flash_attn_score_iter(q, k, 1.0, out=p)
    got = s.f64(p)
    s.assert_close("p", p, reference(q, k, 1.0), TOL)
    assert got[0, 0, :BLOCK_N].max() == 1.0
    np.testing.assert_allclose(got[0, 1, BLOCK_N:2 * BLOCK_N].max(), np.exp(-2.0), rtol=1e-3)


def test_rejects_a_float32_output():
    q, k = (s.strided((2, 8, 16), s.dtype_of("float16"), seed) for seed in range(2))
    with pytest.raises(ValueError, match="out: expected float16"):
        flash_attn_score_iter(q, k, out=s.poisoned((2, 8, 8)))
