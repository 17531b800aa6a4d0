"""flash_attn_gqa against float64 attention with repeated K/V heads."""

import pytest
import torch

from catalog import _support as s
from catalog.attention.flash_attn_gqa.kernel import flash_attn_gqa, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_gqa(case):
    backend, (b, hq, hkv, s1, s2, d), dtype = case
    # q as the [B, S1, Hq, D] layout of most frameworks, viewed as [B, Hq, S1, D].
    q = s.strided((b, s1, hq, d), s.dtype_of(dtype), seed=1).transpose(1, 2)
    k = s.strided((b, hkv, s2, d), s.dtype_of(dtype), seed=2)
    v = s.strided((b, hkv, s2, d), s.dtype_of(dtype), seed=3)
    out = s.poisoned((b, hq, s1, d))
    with s.on_backend(backend):
        flash_attn_gqa(q, k, v, out=out)
    s.assert_close("out", out, reference(q, k, v), TOL)
    s.check_untouched(out)


def test_rejects_heads_that_do_not_divide():
    q = torch.zeros((1, 6, 4, 16))
    k = torch.zeros((1, 4, 4, 16))
    with pytest.raises(ValueError, match="Hkv must divide Hq = 6"):
        flash_attn_gqa(q, k, k)
