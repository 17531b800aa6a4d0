"""Flash attention forward whose P·V consumes HiF8 probabilities: p is scaled by 128, rounded
onto the HiF8 grid (a cast to tl.hifloat8 and back), unscaled and rounded to float16. The row
sum uses the unrounded float32 p. Outputs out, rowmax and rowsum (float32)."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128  # part of the contract: p is rounded under the running max of each 128-key tile
P_SCALE = 128.0  # part of the contract: p·128 is rounded (a power of two: exact both ways)
MASKED = -1e30  # finite: exp(MASKED - m) is 0, never NaN


@asc2.jit
def flash_attn_hif8_kernel(q_ptr, k_ptr, v_ptr, o_ptr, max_ptr, sum_ptr, bh, s1, s2, scale,
                           qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2, os0, os1, os2,
                           ms0, ms1, ls0, ls1, d: asc.ConstExpr[int],
                           tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, s1, d], [os0, os1, os2])
    max_gm = asc2.tensor(max_ptr, [bh, s1], [ms0, ms1])
    sum_gm = asc2.tensor(sum_ptr, [bh, s1], [ls0, ls1])
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
            score = asc2.where(asc2.arange(tile_n) + col < s2, score, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)
            # The HiF8 cast rounds to nearest, ties away from zero: CATALOG's to_hif8 for
            # 0 <= x <= 128; scaling by a power of two is exact both ways.
            p_q = (p * P_SCALE).to(asc2.hifloat8).to(asc2.float32) * (1.0 / P_SCALE)
            o = asc2.matmul_acc(o * alpha, p_q.to(asc2.float16).to(asc2.float32),
                                v.to(asc2.float32))
            m = m_new
        asc2.store((o / l).reshape(1, tile_m, d), o_gm, offsets=[b, row, 0])
        asc2.store(m.reshape(1, tile_m), max_gm, offsets=[b, row])
        asc2.store(l.reshape(1, tile_m), sum_gm, offsets=[b, row])


def _output(given, shape, name):
    if given is None:
        return torch.empty(shape, dtype=torch.float32)
    if list(given.shape) != list(shape) or given.dtype != torch.float32:
        raise ValueError(f"{name}: expected float32 {list(shape)}, got {given.dtype} "
                         f"{list(given.shape)}")
    return given


def flash_attn_hif8(q, k, v, scale=None, out=None, rowmax=None, rowsum=None, core_num=0):
    """q: [BH, S1, D], k, v: [BH, S2, D] (float16/bfloat16/float32, any strides); returns
    (out [BH, S1, D], rowmax [BH, S1], rowsum [BH, S1]) float32, P·V on
    to_hif8(128·p) / 128 rounded to float16."""
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, S1, D], got {list(q.shape)}")
    bh, s1, d = q.shape
    for name, t in (("k", k), ("v", v)):
        if t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d:
            raise ValueError(f"{name}: expected [{bh}, S2, {d}], got {list(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {t.dtype}")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"v: expected S2 = {k.shape[1]} like k, got {v.shape[1]}")
    if k.shape[1] == 0:
        raise ValueError("k: S2 must be at least 1 (a softmax over no keys is undefined)")
    s2 = k.shape[1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    out = _output(out, (bh, s1, d), "out")
    rowmax = _output(rowmax, (bh, s1), "rowmax")
    rowsum = _output(rowsum, (bh, s1), "rowsum")
    flash_attn_hif8_kernel[core_num](q, k, v, out, rowmax, rowsum, bh, s1, s2, scale,
                                     *q.stride(), *k.stride(), *v.stride(), *out.stride(),
                                     *rowmax.stride(), *rowsum.stride(), d, TILE_M, TILE_N)
    return out, rowmax, rowsum


def to_hif8(x, saturate=True):
    """CATALOG.md's HiF8 value rounding in float64 numpy, written from its definition (not from
    the tile language's cast): E = floor(log2|x|); |x| >= 40960 -> +-FLT_MAX (saturate) or
    +-inf; E < -23 -> 0; else sign(x)·floor(|x|/s + 0.5)·s with s = max(2^E, 2^-22)·2^-f,
    f = 3, 2, 1, 0 for |E| <= 3, <= 7, <= 15, >= 16. NaN and +-inf pass through."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    finite = np.isfinite(x) & (mag > 0)
    e = np.frexp(np.where(finite, mag, 1.0))[1] - 1  # exact floor(log2) for every magnitude
    f = np.select([np.abs(e) <= 3, np.abs(e) <= 7, np.abs(e) <= 15], [3, 2, 1], 0)
    step = np.ldexp(1.0, np.maximum(e, -22) - f)
    rounded = np.sign(x) * np.floor(mag / step + 0.5) * step
    rounded = np.where(e < -23, 0.0, rounded)
    big = np.copysign(np.finfo(np.float32).max if saturate else np.inf, x)
    rounded = np.where(mag >= 40960.0, big, rounded)
    return np.where(finite, rounded, x)


def reference(q, k, v, scale=None):
    """float64 numpy (out, rowmax, rowsum), replaying the online softmax per TILE_N keys so that
    p is rounded under the same running max as in the kernel."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score = (q.double().numpy() @ k.double().numpy().swapaxes(-1, -2)) * scale
    vd = v.double().numpy()
    m = np.full(score.shape[:-1] + (1,), -np.inf)
    l = np.zeros_like(m)
    o = np.zeros(score.shape[:-1] + (vd.shape[-1],))
    for c in range(0, score.shape[-1], TILE_N):
        block = score[..., c:c + TILE_N]
        m_new = np.maximum(m, block.max(-1, keepdims=True))
        alpha = np.exp(m - m_new)
        p = np.exp(block - m_new)
        l = l * alpha + p.sum(-1, keepdims=True)
        p_q = (to_hif8(p * P_SCALE) / P_SCALE).astype(np.float16).astype(np.float64)
        o = o * alpha + p_q @ vd[:, c:c + TILE_N]
        m = m_new
    return o / l, m[..., 0], l[..., 0]


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's manual attention (float32,
    no HiF8 rounding: the same matmuls and exponentials)."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn((b * h, n, d), generator=gen).to(getattr(torch, dtype))
               for n in (s1, s2, s2))
    outs = (torch.empty((b * h, s1, d)), torch.empty((b * h, s1)), torch.empty((b * h, s1)))
    qf, kf, vf = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(d)

    def manual():
        score = torch.bmm(qf, kf.transpose(1, 2)) * scale
        m = score.amax(-1, keepdim=True)
        p = torch.exp(score - m)
        l = p.sum(-1, keepdim=True)
        return (p @ vf) / l, m, l

    return {"run": lambda: flash_attn_hif8(q, k, v, None, *outs), "torch": manual,
            "flops": 4.0 * b * h * s1 * s2 * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k, v = (torch.randn((2, n, 32)).half() for n in (70, 150, 150))
    got, want = flash_attn_hif8(q, k, v), reference(q, k, v)
    for g, w, tol in zip(got, want, (2e-2, 1e-5, 1e-5)):
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)
