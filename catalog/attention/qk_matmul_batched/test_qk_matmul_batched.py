"""qk_matmul_batched against a float64 reference over the entry's validated shapes."""

import pytest

from catalog import _support as s
from catalog.attention.qk_matmul_batched.kernel import qk_matmul_batched, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_qk_matmul_batched(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    out = s.poisoned((b * h, s1, s2))
    with s.on_backend(backend):
        qk_matmul_batched(q, k, out)
    s.assert_close("qk", out, reference(q, k), TOL)
    s.check_untouched(out)


def test_rejects_mismatched_heads():
    q = s.strided((2, 8, 16), s.dtype_of("float32"), seed=1)
    k = s.strided((3, 8, 16), s.dtype_of("float32"), seed=2)
    with pytest.raises(ValueError, match="k: expected"):
        qk_matmul_batched(q, k)
