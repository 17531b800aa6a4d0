"""delta_h_chunk against the float64 state bridge: strided inputs, an initial state, poisoned
outputs, a partial last chunk (its g_last is the last token's)."""

import pytest
import torch

from catalog import _support as s
from catalog.linear_attention.delta_h_chunk.kernel import delta_h_chunk, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_delta_h_chunk(case):
    backend, (b, h, t, c, d), dtype = case
    bh, dt = b * h, s.dtype_of(dtype)
    k = s.strided((bh, t, d), dt, seed=1, scale=d ** -0.5, kind="swap")
    w = s.strided((bh, t, d), dt, seed=2, scale=d ** -0.5)
    u = s.strided((bh, t, d), dt, seed=3)
    steps = -0.7 * s.strided((bh, t), torch.float64, seed=4).abs().clamp(max=1.0)
    g = s.strided((bh, t), torch.float32, seed=5)
    g.copy_(torch.cat([x.cumsum(1) for x in steps.split(c, dim=1)], dim=1))
    h0 = s.strided((bh, d, d), torch.float32, seed=6, scale=0.1)
    nt = -(-t // c)
    outs = s.poisoned((bh, nt, d, d)), s.poisoned((bh, t, d)), s.poisoned((bh, d, d))
    with s.on_backend(backend):
        delta_h_chunk(k, w, u, g, h0, c, *outs)
    wants = reference(k, w, u, g, h0, c)
    for name, got, want in zip(("h", "v_new", "final_state"), outs, wants):
        s.assert_close(name, got, want, TOL[name])
        s.check_untouched(got)


def test_rejects_a_bad_chunk():
    x = torch.zeros((1, 4, 8))
    with pytest.raises(ValueError, match="chunk: expected >= 1"):
        delta_h_chunk(x, x, x, torch.zeros((1, 4)), chunk=0)
