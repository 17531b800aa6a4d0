"""Grouped-query flash attention forward: Hq query heads share Hkv K/V heads (query head h reads
K/V head h // (Hq / Hkv)); online softmax with float32 state and the p.half() value path."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128
MASKED = -1e30  # finite: exp(MASKED - m) is 0, never NaN


@asc2.jit
def flash_attn_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, batch, hq, hkv, s1, s2, scale,
                          qs0, qs1, qs2, qs3, ks0, ks1, ks2, ks3, vs0, vs1, vs2, vs3,
                          os0, os1, os2, os3, d: asc.ConstExpr[int],
                          tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [batch, hq, s1, d], [qs0, qs1, qs2, qs3])
    k_gm = asc2.tensor(k_ptr, [batch, hkv, s2, d], [ks0, ks1, ks2, ks3])
    v_gm = asc2.tensor(v_ptr, [batch, hkv, s2, d], [vs0, vs1, vs2, vs3])
    o_gm = asc2.tensor(o_ptr, [batch, hq, s1, d], [os0, os1, os2, os3])
    group = hq // hkv
    tiles_m = asc2.ceildiv(s1, tile_m)
    for t in asc2.range(asc2.block_idx(), batch * hq * tiles_m, asc2.block_num()):
        b = t // (hq * tiles_m)
        h = t // tiles_m % hq
        kv_h = h // group
        row = t % tiles_m * tile_m
        q = asc2.load(q_gm, [1, 1, tile_m, d], offsets=[b, h, row, 0]).reshape(tile_m, d)
        m = asc2.full([tile_m, 1], MASKED, asc2.float32)
        l = asc2.zeros([tile_m, 1], asc2.float32)
        o = asc2.zeros([tile_m, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(s2, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, 1, tile_n, d], offsets=[b, kv_h, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, 1, tile_n, d], offsets=[b, kv_h, col, 0]).reshape(tile_n, d)
            score = asc2.matmul(q, k.T) * scale
            score = asc2.where(asc2.arange(tile_n) + col < s2, score, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)
            o = asc2.matmul_acc(o * alpha, p.to(asc2.float16).to(asc2.float32),
                                v.to(asc2.float32))
            m = m_new
        asc2.store((o / l).reshape(1, 1, tile_m, d), o_gm, offsets=[b, h, row, 0])


def flash_attn_gqa(q, k, v, scale=None, out=None, core_num=0):
    """q: [B, Hq, S1, D], k, v: [B, Hkv, S2, D] with Hq a multiple of Hkv (float16/bfloat16/
    float32, any strides); returns out [B, Hq, S1, D] float32, query head h attending to K/V
    head h // (Hq / Hkv)."""
    if q.dim() != 4:
        raise ValueError(f"q: expected [B, Hq, S1, D], got {list(q.shape)}")
    batch, hq, s1, d = q.shape
    for name, t in (("k", k), ("v", v)):
        if t.dim() != 4 or t.shape[0] != batch or t.shape[3] != d:
            raise ValueError(f"{name}: expected [{batch}, Hkv, S2, {d}], got {list(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {t.dtype}")
    if k.shape[1:3] != v.shape[1:3]:
        raise ValueError(f"v: expected [.., {k.shape[1]}, {k.shape[2]}, ..] like k, got "
                         f"{list(v.shape)}")
    hkv, s2 = k.shape[1], k.shape[2]
    if hkv == 0 or hq % hkv != 0:
        raise ValueError(f"k: Hkv must divide Hq = {hq}, got Hkv = {hkv}")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((batch, hq, s1, d), dtype=torch.float32)
    if list(out.shape) != [batch, hq, s1, d] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 {[batch, hq, s1, d]}, got {out.dtype} "
                         f"{list(out.shape)}")
    flash_attn_gqa_kernel[core_num](q, k, v, out, batch, hq, hkv, s1, s2, scale, *q.stride(),
                                    *k.stride(), *v.stride(), *out.stride(), d, TILE_M, TILE_N)
    return out


def reference(q, k, v, scale=None):
    """float64 numpy grouped-query attention (K/V heads repeated Hq / Hkv times)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k.double().numpy(), group, axis=1)
    vv = np.repeat(v.double().numpy(), group, axis=1)
    score = (q.double().numpy() @ kk.swapaxes(-1, -2)) * scale
    p = np.exp(score - score.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ vv


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's manual attention with the
    K/V heads expanded (float32). shape: (B, Hq, Hkv, S1, S2, D)."""
    b, hq, hkv, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q = torch.randn((b, hq, s1, d), generator=gen).to(getattr(torch, dtype))
    k, v = (torch.randn((b, hkv, s2, d), generator=gen).to(getattr(torch, dtype)) for _ in "kv")
    out = torch.empty((b, hq, s1, d), dtype=torch.float32)
    qf = q.float()
    kf, vf = (t.float().repeat_interleave(hq // hkv, dim=1) for t in (k, v))
    scale = 1.0 / math.sqrt(d)
    return {"run": lambda: flash_attn_gqa(q, k, v, out=out),
            "torch": lambda: torch.softmax(qf @ kf.transpose(-1, -2) * scale, -1) @ vf,
            "flops": 4.0 * b * hq * s1 * s2 * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k, v = torch.randn((1, 4, 70, 32)).half(), torch.randn((1, 2, 150, 32)).half(), \
        torch.randn((1, 2, 150, 32)).half()
    np.testing.assert_allclose(flash_attn_gqa(q, k, v).numpy(), reference(q, k, v), rtol=1e-2,
                               atol=1e-2)
