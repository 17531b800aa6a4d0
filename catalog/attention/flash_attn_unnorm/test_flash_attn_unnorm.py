"""flash_attn_unnorm against the float64 numerator and row statistics."""

import pytest

from catalog import _support as s
from catalog.attention.flash_attn_unnorm.kernel import flash_attn_unnorm, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_unnorm(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    v = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=3)
    outs = s.poisoned((b * h, s1, d)), s.poisoned((b * h, s1)), s.poisoned((b * h, s1))
    with s.on_backend(backend):
        flash_attn_unnorm(q, k, v, 0.125, *outs)
    for name, got, want in zip(("out", "rowmax", "rowsum"), outs, reference(q, k, v, 0.125)):
        s.assert_close(name, got, want, TOL[name])
        s.check_untouched(got)


def test_rejects_a_wrong_output():
    q, k, v = (s.strided((2, 8, 16), s.dtype_of("float32"), seed) for seed in range(3))
    with pytest.raises(ValueError, match=r"rowsum: expected float32 \[2, 8\]"):
        flash_attn_unnorm(q, k, v, rowsum=s.poisoned((2, 9)))
