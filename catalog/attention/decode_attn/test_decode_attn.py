"""decode_attn against float64 attention of one query row, tails in S."""

import pytest

from catalog import _support as s
from catalog.attention.decode_attn.kernel import decode_attn, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_decode_attn(case):
    backend, (b, h, n, d), dtype = case
    q = s.strided((b * h, d), s.dtype_of(dtype), seed=1)
    k = s.strided((b * h, n, d), s.dtype_of(dtype), seed=2, kind="swap")
    v = s.strided((b * h, n, d), s.dtype_of(dtype), seed=3)
    out = s.poisoned((b * h, d))
    with s.on_backend(backend):
        decode_attn(q, k, v, out=out)
    s.assert_close("out", out, reference(q, k, v), TOL)
    s.check_untouched(out)


def test_rejects_a_query_sequence():
    q = s.strided((2, 3, 16), s.dtype_of("float16"), seed=1)
    with pytest.raises(ValueError, match=r"q: expected \[BH, D\]"):
        decode_attn(q, q, q)
