"""Gated delta rule, token by token: one float32 state S [D, D] per batch·head stays resident
while the tokens stream through (S *= exp(g); delta = (v - Sᵀk)·beta; S += k ⊗ delta;
o = Sᵀq·scale); the outputs o of every token and the final state."""

import math

import numpy as np
import torch

from tileops import asc, asc2


@asc2.jit
def recurrent_state_attn_kernel(q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, h0_ptr, o_ptr, s_ptr,
                                bh, t, scale, qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2,
                                gs0, gs1, bs0, bs1, hs0, hs1, hs2, os0, os1, os2, ss0, ss1, ss2,
                                d: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, t, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, t, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, t, d], [vs0, vs1, vs2])
    g_gm = asc2.tensor(g_ptr, [bh, t], [gs0, gs1])
    beta_gm = asc2.tensor(beta_ptr, [bh, t], [bs0, bs1])
    h0_gm = asc2.tensor(h0_ptr, [bh, d, d], [hs0, hs1, hs2])
    o_gm = asc2.tensor(o_ptr, [bh, t, d], [os0, os1, os2])
    s_gm = asc2.tensor(s_ptr, [bh, d, d], [ss0, ss1, ss2])
    for b in asc2.range(asc2.block_idx(), bh, asc2.block_num()):
        s = asc2.load(h0_gm, [1, d, d], offsets=[b, 0, 0]).reshape(d, d)
        for i in asc2.range(t):
            q = asc2.load(q_gm, [1, 1, d], offsets=[b, i, 0]).reshape(1, d).to(asc2.float32)
            k = asc2.load(k_gm, [1, 1, d], offsets=[b, i, 0]).reshape(1, d).to(asc2.float32)
            v = asc2.load(v_gm, [1, 1, d], offsets=[b, i, 0]).reshape(1, d).to(asc2.float32)
            g = asc2.load(g_gm, [1, 1], offsets=[b, i]).to(asc2.float32)
            beta = asc2.load(beta_gm, [1, 1], offsets=[b, i]).to(asc2.float32)
            s = s * asc2.exp(g)                                   # decay, g in log space
            delta = (v - asc2.matmul(k, s)) * beta                # [1, D]: beta (v - Sᵀk)
            s = asc2.matmul_acc(s, k.T, delta)                    # S + k ⊗ delta
            o = asc2.matmul(q * scale, s)                         # (Sᵀq)ᵀ
            asc2.store(o.reshape(1, 1, d), o_gm, offsets=[b, i, 0])
        asc2.store(s.reshape(1, d, d), s_gm, offsets=[b, 0, 0])


def recurrent_state_attn(q, k, v, g, beta, initial_state=None, scale=None, out=None,
                         final_state=None, core_num=0):
    """q, k, v: [BH, T, D] (float16/bfloat16/float32 alike, any strides); g (log-space decay) and
    beta: [BH, T] (any float dtype); initial_state: float32 [BH, D, D] or None (zeros). Returns
    (out float32 [BH, T, D], final_state float32 [BH, D, D]); scale defaults to 1/sqrt(D)."""
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, T, D], got {list(q.shape)}")
    bh, t, d = q.shape
    for name, x in (("k", k), ("v", v)):
        if list(x.shape) != [bh, t, d]:
            raise ValueError(f"{name}: expected [{bh}, {t}, {d}] like q, got {list(x.shape)}")
        if x.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {x.dtype}")
    for name, x in (("g", g), ("beta", beta)):
        if list(x.shape) != [bh, t]:
            raise ValueError(f"{name}: expected [{bh}, {t}], got {list(x.shape)}")
    if initial_state is None:
        initial_state = torch.zeros((bh, d, d), dtype=torch.float32)
    for name, x in (("initial_state", initial_state), ("final_state", final_state)):
        if x is not None and (list(x.shape) != [bh, d, d] or x.dtype != torch.float32):
            raise ValueError(f"{name}: expected float32 [{bh}, {d}, {d}], got {x.dtype} "
                             f"{list(x.shape)}")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((bh, t, d), dtype=torch.float32)
    if list(out.shape) != [bh, t, d] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{bh}, {t}, {d}], got {out.dtype} "
                         f"{list(out.shape)}")
    if final_state is None:
        final_state = torch.empty((bh, d, d), dtype=torch.float32)
    recurrent_state_attn_kernel[core_num](
        q, k, v, g, beta, initial_state, out, final_state, bh, t, scale, *q.stride(),
        *k.stride(), *v.stride(), *g.stride(), *beta.stride(), *initial_state.stride(),
        *out.stride(), *final_state.stride(), d)
    return out, final_state


def reference(q, k, v, g, beta, initial_state=None, scale=None):
    """float64 numpy recurrence; returns (out [BH, T, D], final_state [BH, D, D])."""
    q, k, v, g, beta = (x.double().numpy() for x in (q, k, v, g, beta))
    bh, t, d = q.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    s = (np.zeros((bh, d, d)) if initial_state is None
         else initial_state.double().numpy().copy())
    out = np.zeros((bh, t, d))
    for i in range(t):
        s = s * np.exp(g[:, i])[:, None, None]
        delta = (v[:, i] - np.einsum("bkv,bk->bv", s, k[:, i])) * beta[:, i, None]
        s = s + k[:, i, :, None] * delta[:, None, :]
        out[:, i] = np.einsum("bkv,bk->bv", s, q[:, i] * scale)
    return out, s


def inputs(bh, t, d, dtype, seed=0):
    """q, k (|k| about 1), v, g in [-0.7, 0] and beta in [0, 1]: a bounded recurrence."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((bh, t, d), generator=gen).to(dtype)
    k = (torch.randn((bh, t, d), generator=gen) / math.sqrt(d)).to(dtype)
    v = torch.randn((bh, t, d), generator=gen).to(dtype)
    g = -0.7 * torch.rand((bh, t), generator=gen)
    beta = torch.rand((bh, t), generator=gen).to(dtype)
    return q, k, v, g, beta


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and the same recurrence in torch."""
    b, h, t, d = shape
    q, k, v, g, beta = inputs(b * h, t, d, getattr(torch, dtype))
    out = torch.empty((b * h, t, d), dtype=torch.float32)
    qf, kf, vf, bf = q.float(), k.float(), v.float(), beta.float()
    scale = 1.0 / math.sqrt(d)

    def manual():
        s = torch.zeros((b * h, d, d))
        o = torch.empty((b * h, t, d))
        for i in range(t):
            s = s * torch.exp(g[:, i])[:, None, None]
            delta = (vf[:, i] - torch.einsum("bkv,bk->bv", s, kf[:, i])) * bf[:, i, None]
            s = s + kf[:, i, :, None] * delta[:, None, :]
            o[:, i] = torch.einsum("bkv,bk->bv", s, qf[:, i] * scale)
        return o

    return {"run": lambda: recurrent_state_attn(q, k, v, g, beta, out=out), "torch": manual,
            "flops": 8.0 * b * h * t * d * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k, v, g, beta = inputs(2, 9, 16, torch.float32)
    got, state = recurrent_state_attn(q, k, v, g, beta)
    want, want_state = reference(q, k, v, g, beta)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(state.numpy(), want_state, rtol=1e-4, atol=1e-4)
