"""flash_attn_score against float64 per-block softmax numerators."""

import pytest
import torch

from catalog import _support as s
from catalog.attention.flash_attn_score.kernel import flash_attn_score, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["p"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_score(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    p = s.poisoned((b * h, s1, s2), torch.float16)
    with s.on_backend(backend):
        flash_attn_score(q, k, 0.1, out=p)
    s.assert_close("p", p, reference(q, k, 0.1), TOL)
    s.check_untouched(p)


def test_rejects_a_float32_output():
    q, k = (s.strided((2, 8, 16), s.dtype_of("float16"), seed) for seed in range(2))
    with pytest.raises(ValueError, match="out: expected float16"):
        flash_attn_score(q, k, out=s.poisoned((2, 8, 8)))
