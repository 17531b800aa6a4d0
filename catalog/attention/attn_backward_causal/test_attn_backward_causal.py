"""attn_backward_causal against float64 numpy of the contract's formulas under the mask k <= q,
and against torch autograd of the masked manual attention; tails in S1 and S2 (S1 < S2 and
S1 > S2); tiles wholly in the masked future are never read (NaN there leaves the gradients
finite)."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.attention.attn_backward_causal.kernel import (TILE_N, attn_backward_causal,
                                                           forward_statistics, reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]
SCALE = 0.1


def inputs(shape, dtype):
    """q, k, v, grad with non-contiguous strides, and the causal forward's o (rounded to dtype,
    a strided view too), qkmax and qksum (float32)."""
    b, h, s1, s2, d = shape
    dt = s.dtype_of(dtype)
    q = s.strided((b * h, s1, d), dt, seed=1, kind="swap")
    k = s.strided((b * h, s2, d), dt, seed=2)
    v = s.strided((b * h, s2, d), dt, seed=3, kind="swap")
    grad = s.strided((b * h, s1, d), dt, seed=4)
    o, qkmax, qksum = (torch.from_numpy(x) for x in forward_statistics(q, k, v, SCALE))
    o_view = s.strided((b * h, s1, d), dt, seed=5)
    o_view.copy_(o)
    return q, k, v, o_view, grad, qkmax.float(), qksum.float()


def autograd(q, k, v, grad):
    """torch autograd of softmax(q k^T · scale, masked k > q) v in float64: (gq, gk, gv)."""
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    future = torch.arange(k.shape[1])[None, :] > torch.arange(q.shape[1])[:, None]
    score = (leaves[0] @ leaves[1].transpose(1, 2) * SCALE).masked_fill(future, -math.inf)
    out = torch.softmax(score, -1) @ leaves[2]
    out.backward(grad.double())
    return [leaf.grad.numpy() for leaf in leaves]


def run(backend, args):
    bh, s1, d = args[0].shape
    s2 = args[1].shape[1]
    outs = s.poisoned((bh, s1, d)), s.poisoned((bh, s2, d)), s.poisoned((bh, s2, d))
    with s.on_backend(backend):
        attn_backward_causal(*args, SCALE, *outs)
    for got in outs:
        s.check_untouched(got)
    return outs


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_attn_backward_causal(case):
    backend, shape, dtype = case
    args = inputs(shape, dtype)
    outs = run(backend, args)
    for name, got, want in zip(("gq", "gk", "gv"), outs, reference(*args, SCALE)):
        s.assert_close(name, got, want, TOL[name])
    for name, got, want in zip(("gq", "gk", "gv"), outs, autograd(*args[:3], args[4])):
        s.assert_close(f"{name} (autograd)", got, want, TOL["autograd"])


@pytest.mark.parametrize("backend", s.selected_backends())
def test_future_tiles_are_skipped(backend):
    # S1 = 70: no query sees a key >= 70, so key tiles from TILE_N on are in every query's
    # future. They hold NaN, which a masked-but-computed tile would carry into gq (0 · NaN) and
    # into their own gk, gv; skipped, gq is finite and their gk, gv are 0. (D as the validated
    # shapes on cpu: no kernel compiled for this test alone.)
    d = 128 if backend == "cpu" else 32
    args = list(inputs((1, 2, 70, 3 * TILE_N, d), "float16"))
    for t in (args[1], args[2]):
        t[:, TILE_N:] = math.nan
    visible = [a[:, :TILE_N] if i in (1, 2) else a for i, a in enumerate(args)]
    gq, gk, gv = run(backend, args)
    want = reference(*visible, SCALE)
    s.assert_close("gq", gq, want[0], TOL["gq"])
    s.assert_close("gk", gk[:, :TILE_N], want[1], TOL["gk"])
    s.assert_close("gv", gv[:, :TILE_N], want[2], TOL["gv"])
    assert np.all(s.f64(gk[:, TILE_N:]) == 0) and np.all(s.f64(gv[:, TILE_N:]) == 0)


def test_rejects_statistics_of_another_shape():
    args = list(inputs((1, 1, 8, 12, 16), "float16"))
    args[5] = torch.ones((1, 9))
    with pytest.raises(ValueError, match=r"qkmax: expected float32 \[1, 8\]"):
        attn_backward_causal(*args)
    args = inputs((1, 1, 8, 12, 16), "float16")
    with pytest.raises(TypeError, match="v: expected torch.float16 like q"):
        attn_backward_causal(*args[:2], args[2].float(), *args[3:])
