"""flash_attn_full against float64 attention over the entry's validated shapes."""

import math

import pytest

from catalog import _support as s
from catalog.attention.flash_attn_full.kernel import flash_attn_full, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_full(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    v = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=3)
    out = s.poisoned((b * h, s1, d))
    scale = 1.0 / math.sqrt(d)
    with s.on_backend(backend):
        flash_attn_full(q, k, v, out=out)
    s.assert_close("out", out, reference(q, k, v, scale), TOL)
    s.check_untouched(out)


def test_rejects_mismatched_v():
    half = s.dtype_of("float16")
    q, k, v = (s.strided((2, n, 16), half, seed) for seed, n in enumerate((8, 9, 8)))
    with pytest.raises(ValueError, match="v: expected S2 = 9"):
        flash_attn_full(q, k, v)
