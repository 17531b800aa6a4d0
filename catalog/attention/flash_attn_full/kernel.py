"""Normalised flash attention forward: online softmax over column tiles of K/V with float32
running row max, row sum and output accumulator; the P·V operand is p.half().float()."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128
MASKED = -1e30  # finite, so exp(MASKED - m) is 0 and a fully masked tile cannot make NaN


@asc2.jit
def flash_attn_full_kernel(q_ptr, k_ptr, v_ptr, out_ptr, bh, s1, s2, scale,
                           qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2, os0, os1, os2,
                           d: asc.ConstExpr[int], tile_m: asc.ConstExpr[int],
                           tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    out_gm = asc2.tensor(out_ptr, [bh, s1, d], [os0, os1, os2])
    tiles_m = asc2.ceildiv(s1, tile_m)
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        m = asc2.full([tile_m, 1], MASKED, asc2.float32)
        l = asc2.zeros([tile_m, 1], asc2.float32)
        o = asc2.zeros([tile_m, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(s2, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            score = asc2.matmul(q, k.T) * scale
            # Columns past s2 (zero-padded K rows) must not enter the row max or the sum.
            score = asc2.where(asc2.arange(tile_n) + col < s2, score, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)  # from the float32 p, before rounding
            p_value = p.to(asc2.float16).to(asc2.float32)
            o = asc2.matmul_acc(o * alpha, p_value, v.to(asc2.float32))
            m = m_new
        asc2.store((o / l).reshape(1, tile_m, d), out_gm, offsets=[b, row, 0])


def _check(q, k, v):
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, S1, D], got {list(q.shape)}")
    bh, _, d = q.shape
    for name, t in (("k", k), ("v", v)):
        if t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d:
            raise ValueError(f"{name}: expected [{bh}, S2, {d}], got {list(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {t.dtype}")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"v: expected S2 = {k.shape[1]} like k, got {v.shape[1]}")


def flash_attn_full(q, k, v, scale=None, out=None, core_num=0):
    """q: [BH, S1, D], k, v: [BH, S2, D] (float16/bfloat16/float32, any strides); returns
    out = softmax(q k^T · scale) v as float32 [BH, S1, D]; scale defaults to 1/sqrt(D)."""
    _check(q, k, v)
    bh, s1, d = q.shape
    s2 = k.shape[1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((bh, s1, d), dtype=torch.float32)
    if list(out.shape) != [bh, s1, d] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{bh}, {s1}, {d}], got {out.dtype} "
                         f"{list(out.shape)}")
    flash_attn_full_kernel[core_num](q, k, v, out, bh, s1, s2, scale, *q.stride(), *k.stride(),
                                     *v.stride(), *out.stride(), d, TILE_M, TILE_N)
    return out


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's manual attention (float32)."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn((b * h, n, d), generator=gen).to(getattr(torch, dtype))
               for n in (s1, s2, s2))
    out = torch.empty((b * h, s1, d), dtype=torch.float32)
    qf, kf, vf = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(d)
    return {"run": lambda: flash_attn_full(q, k, v, out=out),
            "torch": lambda: torch.softmax(torch.bmm(qf, kf.transpose(1, 2)) * scale, -1) @ vf,
            "flops": 4.0 * b * h * s1 * s2 * d}


def reference(q, k, v, scale=None):
    """float64 numpy softmax(q k^T · scale) v."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score = (q.double().numpy() @ k.double().numpy().swapaxes(-1, -2)) * scale
    p = np.exp(score - score.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.double().numpy()


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k, v = (torch.randn((2, n, 32)).half() for n in (70, 150, 150))
    np.testing.assert_allclose(flash_attn_full(q, k, v).numpy(), reference(q, k, v), rtol=1e-2,
                               atol=1e-2)
