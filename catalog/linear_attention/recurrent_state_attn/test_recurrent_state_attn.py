"""recurrent_state_attn against the float64 recurrence: strided inputs, an initial state, poisoned
outputs, token counts that are not a multiple of anything."""

import math

import pytest
import torch

from catalog import _support as s
from catalog.linear_attention.recurrent_state_attn.kernel import recurrent_state_attn, reference

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


def gates(bh, t, dtype, seed):
    """g = -0.3·|x| (log-space decay) and beta = sigmoid(x), non-contiguous."""
    g = s.strided((bh, t), torch.float32, seed=seed)
    beta = s.strided((bh, t), torch.float64, seed=seed + 1)
    g.copy_(-0.3 * g.abs())
    return g, beta.sigmoid().to(dtype)


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_recurrent_state_attn(case):
    backend, (b, h, t, d), dtype = case
    bh = b * h
    q = s.strided((bh, t, d), s.dtype_of(dtype), seed=1)
    k = s.strided((bh, t, d), s.dtype_of(dtype), seed=2, scale=1 / math.sqrt(d), kind="swap")
    v = s.strided((bh, t, d), s.dtype_of(dtype), seed=3)
    g, beta = gates(bh, t, s.dtype_of(dtype), seed=4)
    h0 = s.strided((bh, d, d), torch.float32, seed=6, scale=0.1)
    out, state = s.poisoned((bh, t, d)), s.poisoned((bh, d, d))
    with s.on_backend(backend):
        recurrent_state_attn(q, k, v, g, beta, h0, out=out, final_state=state)
    want, want_state = reference(q, k, v, g, beta, h0)
    s.assert_close("out", out, want, TOL["out"])
    s.assert_close("final_state", state, want_state, TOL["final_state"])
    s.check_untouched(out)
    s.check_untouched(state)


def test_rejects_mismatched_gates():
    q = torch.zeros((2, 3, 16))
    with pytest.raises(ValueError, match=r"g: expected \[2, 3\]"):
        recurrent_state_attn(q, q, q, torch.zeros((2, 4)), torch.zeros((2, 3)))
