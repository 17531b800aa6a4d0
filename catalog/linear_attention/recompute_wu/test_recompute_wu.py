"""recompute_wu against float64 per-chunk products (the float16 value path of k_beta·decay
reproduced exactly): strided inputs, poisoned outputs, a partial last chunk."""

import pytest
import torch

from catalog import _support as s
from catalog.linear_attention.recompute_wu.kernel import recompute_wu, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_recompute_wu(case):
    backend, (b, h, t, c, d), dtype = case
    bh, dt = b * h, s.dtype_of(dtype)
    # attn: each chunk's unit lower-triangular (I + A)^-1-like block, small off the diagonal.
    attn = s.strided((bh, t, c), torch.float64, seed=1, scale=0.2)
    rows = torch.arange(t)[:, None] % c
    attn = torch.where(torch.arange(c)[None, :] < rows, attn,
                       (torch.arange(c)[None, :] == rows).double()).to(dt)
    k_beta = s.strided((bh, t, d), dt, seed=2, kind="swap")
    decay = s.strided((bh, t), torch.float64, seed=3).abs().neg().exp().to(dt)
    v = s.strided((bh, t, d), dt, seed=4)
    outs = s.poisoned((bh, t, d)), s.poisoned((bh, t, d))
    with s.on_backend(backend):
        recompute_wu(attn, k_beta, decay, v, *outs)
    for name, got, want in zip(("k_cumdecay", "kv"), outs, reference(attn, k_beta, decay, v)):
        s.assert_close(name, got, want, TOL[name])
        s.check_untouched(got)


def test_rejects_mismatched_values():
    attn = torch.zeros((2, 64, 64))
    with pytest.raises(ValueError, match=r"v: expected \[2, 64, 16\]"):
        recompute_wu(attn, torch.zeros((2, 64, 16)), torch.zeros((2, 64)), torch.zeros((2, 64, 8)))
