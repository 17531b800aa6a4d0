"""Decode attention: one query row per (batch·head) against a K/V sequence of any length,
streamed in tiles with an online softmax (float32 state, p.half() value path); the last tile's
keys past S are masked."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_N = 128
MASKED = -1e30  # finite: exp(MASKED - m) is 0, never NaN


@asc2.jit
def decode_attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, bh, s, scale, qs0, qs1, ks0, ks1, ks2,
                       vs0, vs1, vs2, os0, os1, d: asc.ConstExpr[int],
                       tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, d], [qs0, qs1])
    k_gm = asc2.tensor(k_ptr, [bh, s, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, d], [os0, os1])
    for b in asc2.range(asc2.block_idx(), bh, asc2.block_num()):
        q = asc2.load(q_gm, [1, d], offsets=[b, 0])  # the query row stays resident
        m = asc2.full([1, 1], MASKED, asc2.float32)
        l = asc2.zeros([1, 1], asc2.float32)
        o = asc2.zeros([1, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(s, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            score = asc2.matmul(q, k.T) * scale
            score = asc2.where(asc2.arange(tile_n) + col < s, score, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)
            o = asc2.matmul_acc(o * alpha, p.to(asc2.float16).to(asc2.float32),
                                v.to(asc2.float32))
            m = m_new
        asc2.store(o / l, o_gm, offsets=[b, 0])


def decode_attn(q, k, v, scale=None, out=None, core_num=0):
    """q: [BH, D] (one query row per batch·head), k, v: [BH, S, D] (float16/bfloat16/float32,
    any strides); returns out = softmax(q k^T · scale) v as float32 [BH, D]."""
    if q.dim() != 2:
        raise ValueError(f"q: expected [BH, D], got {list(q.shape)}")
    bh, d = q.shape
    for name, t in (("k", k), ("v", v)):
        if t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d:
            raise ValueError(f"{name}: expected [{bh}, S, {d}], got {list(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {t.dtype}")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"v: expected S = {k.shape[1]} like k, got {v.shape[1]}")
    if k.shape[1] == 0:
        raise ValueError("k: S must be at least 1 (a softmax over no keys is undefined)")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((bh, d), dtype=torch.float32)
    if list(out.shape) != [bh, d] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{bh}, {d}], got {out.dtype} {list(out.shape)}")
    decode_attn_kernel[core_num](q, k, v, out, bh, k.shape[1], scale, *q.stride(), *k.stride(),
                                 *v.stride(), *out.stride(), d, TILE_N)
    return out


def reference(q, k, v, scale=None):
    """float64 numpy softmax(q k^T · scale) v for one query row per batch·head."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score = (k.double().numpy() @ q.double().numpy()[:, :, None])[:, :, 0] * scale
    p = np.exp(score - score.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True))[:, None, :] @ v.double().numpy())[:, 0]


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's manual attention (float32)."""
    b, h, s, d = shape
    gen = torch.Generator().manual_seed(0)
    q = torch.randn((b * h, d), generator=gen).to(getattr(torch, dtype))
    k, v = (torch.randn((b * h, s, d), generator=gen).to(getattr(torch, dtype)) for _ in "kv")
    out = torch.empty((b * h, d), dtype=torch.float32)
    qf, kf, vf = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(d)

    def manual():
        score = torch.bmm(kf, qf[:, :, None])[:, :, 0] * scale
        return torch.bmm(torch.softmax(score, -1)[:, None, :], vf)[:, 0]

    return {"run": lambda: decode_attn(q, k, v, out=out), "torch": manual,
            "flops": 4.0 * b * h * s * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k, v = torch.randn((4, 32)).half(), torch.randn((4, 150, 32)).half(), \
        torch.randn((4, 150, 32)).half()
    np.testing.assert_allclose(decode_attn(q, k, v).numpy(), reference(q, k, v), rtol=1e-2,
                               atol=1e-2)
