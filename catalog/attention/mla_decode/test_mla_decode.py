"""mla_decode against float64 absorbed MLA with the e4m3(16·p) value path replayed in numpy,
tails in S and in the heads."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.attention.mla_decode.kernel import TILE_H, mla_decode, reference, to_e4m3

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]


def run_and_check(backend, shape, dtype, scale_rope):
    b, h, n, dn, dr = shape
    q_nope = s.strided((b, h, dn), s.dtype_of(dtype), seed=1, kind="swap")
    q_rope = s.strided((b, h, dr), s.dtype_of(dtype), seed=2)
    k_nope = s.strided((b, n, dn), s.dtype_of(dtype), seed=3)
    k_rope = s.strided((b, n, dr), s.dtype_of(dtype), seed=4, kind="swap")
    out = s.poisoned((b, h, dn))
    with s.on_backend(backend):
        mla_decode(q_nope, q_rope, k_nope, k_rope, None, scale_rope, out=out)
    s.assert_close("out", out, reference(q_nope, q_rope, k_nope, k_rope, None, scale_rope), TOL)
    s.check_untouched(out)


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_mla_decode(case):
    backend, shape, dtype = case
    run_and_check(backend, shape, dtype, 0.5)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_head_tail_and_the_rope_term(backend):
    # H = TILE_H + 3 heads: a second, partial head tile; scale_rope = 2 weighs the rope term.
    run_and_check(backend, (1, TILE_H + 3, 40, 16, 8), "float32", 2.0)


def test_the_reference_keeps_the_16():
    # A single key: p = 1, e4m3(16) = 16, so out = 16 · k_nope.
    kn = torch.randn((1, 1, 8), dtype=torch.float64)
    got = reference(torch.ones((1, 2, 8)), torch.ones((1, 2, 4)), kn, torch.ones((1, 1, 4)))
    np.testing.assert_allclose(got, 16.0 * np.broadcast_to(kn.numpy(), (1, 2, 8)))
    np.testing.assert_array_equal(to_e4m3([9.3, 0.7, 1.0625, 500.0]), [9.0, 0.6875, 1.0, 448.0])


def test_rejects_a_mismatched_rope_key():
    qn, qr = torch.zeros((1, 4, 16)), torch.zeros((1, 4, 8))
    kn, kr = torch.zeros((1, 5, 16)), torch.zeros((1, 6, 8))
    with pytest.raises(ValueError, match=r"k_rope: expected \[1, 5, 8\]"):
        mla_decode(qn, qr, kn, kr)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_the_value_path_is_e4m3_of_16p(backend):
    # Key i scores log(x_i / 16) against a max of 0 (q_nope row = those scores, k_nope the
    # identity, no rope), so 16·p_i = x_i and out[h, i] = e4m3(x_i) / rowsum, the 16 kept.
    x = np.array([16.0, 9.3, 5.2, 1.7, 0.3, 0.05, 0.004, 11.0])
    n = len(x)
    q_nope = torch.from_numpy(np.log(x / 16.0)).float().expand(1, 2, n).contiguous()
    k_nope = torch.eye(n)[None]
    q_rope, k_rope = torch.ones((1, 2, 4)), torch.ones((1, n, 4))
    out = s.poisoned((1, 2, n))
    with s.on_backend(backend):
        mla_decode(q_nope, q_rope, k_nope, k_rope, 1.0, 0.0, out=out)
    p = np.exp(s.f64(q_nope)[0, 0])  # the float32 scores' exact p
    want = to_e4m3(16.0 * p) / p.sum()
    np.testing.assert_allclose(s.f64(out)[0], np.stack([want, want]), rtol=1e-6)
    np.testing.assert_array_equal(to_e4m3(16.0 * p)[:4], [16.0, 9.0, 5.0, 1.75])
