"""Causal (top-left, k <= q) flash attention on float8_e5m2 q, k, v (uint8 storage of the codes)
with an e5m2 probability value path: P·V consumes p rounded to e5m2, the row sum the float32 p.
All state float32; K/V tiles wholly in the future of a query tile are skipped by the loop bound.
Outputs out, rowmax and rowsum (float32)."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128  # part of the contract: p is rounded under the running max of each 128-key tile
MASKED = -1e30  # finite: exp(MASKED - m) is 0, never NaN


@asc2.jit
def flash_attn_fp8_causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, max_ptr, sum_ptr, bh, s1, s2,
                                 scale, qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2,
                                 os0, os1, os2, ms0, ms1, ls0, ls1, d: asc.ConstExpr[int],
                                 tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])  # float8_e5m2 elements
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, s1, d], [os0, os1, os2])
    max_gm = asc2.tensor(max_ptr, [bh, s1], [ms0, ms1])
    sum_gm = asc2.tensor(sum_ptr, [bh, s1], [ls0, ls1])
    tiles_m = asc2.ceildiv(s1, tile_m)
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        # Query r sees keys 0..r: the tile's last row bounds the keys any of its rows needs.
        visible = asc2.minimum(asc2.minimum(row + tile_m, s1), s2)
        q_pos = (asc2.arange(tile_m) + row).reshape(tile_m, 1)
        # e5m2 -> float32 is exact: the matmuls see the stored values.
        q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        q = q.to(asc2.float32)
        m = asc2.full([tile_m, 1], MASKED, asc2.float32)
        l = asc2.zeros([tile_m, 1], asc2.float32)
        o = asc2.zeros([tile_m, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(visible, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            score = asc2.matmul(q, k.to(asc2.float32).T) * scale
            k_pos = asc2.arange(tile_n) + col
            score = asc2.where(asc2.logical_and(k_pos <= q_pos, k_pos < s2), score, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)
            p_q = p.to(asc2.float8_e5m2).to(asc2.float32)  # to nearest, ties to even
            o = asc2.matmul_acc(o * alpha, p_q, v.to(asc2.float32))
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


def flash_attn_fp8_causal(q, k, v, scale=None, out=None, rowmax=None, rowsum=None, core_num=0):
    """q: [BH, S1, D], k, v: [BH, S2, D], torch.uint8 tensors holding float8_e5m2 codes (torch
    1.13 has no fp8 dtype; any strides); returns (out [BH, S1, D], rowmax [BH, S1],
    rowsum [BH, S1]) float32 under the mask k <= q (query 0 and key 0 aligned)."""
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, S1, D], got {list(q.shape)}")
    bh, s1, d = q.shape
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype != torch.uint8:
            raise TypeError(f"{name}: expected torch.uint8 storage of float8_e5m2 codes, got "
                            f"{t.dtype}")
        if name != "q" and (t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d):
            raise ValueError(f"{name}: expected [{bh}, S2, {d}], got {list(t.shape)}")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"v: expected S2 = {k.shape[1]} like k, got {v.shape[1]}")
    if k.shape[1] == 0:
        raise ValueError("k: S2 must be at least 1 (query 0 sees key 0)")
    s2 = k.shape[1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    out = _output(out, (bh, s1, d), "out")
    rowmax = _output(rowmax, (bh, s1), "rowmax")
    rowsum = _output(rowsum, (bh, s1), "rowsum")
    e5m2 = asc2.float8_e5m2
    flash_attn_fp8_causal_kernel[core_num](
        asc2.reinterpret(q, e5m2), asc2.reinterpret(k, e5m2), asc2.reinterpret(v, e5m2), out,
        rowmax, rowsum, bh, s1, s2, scale, *q.stride(), *k.stride(), *v.stride(),
        *out.stride(), *rowmax.stride(), *rowsum.stride(), d, TILE_M, TILE_N)
    return out, rowmax, rowsum


def e5m2_decode(codes):
    """float64 values of float8_e5m2 codes (uint8): e5m2 is the top byte of float16 (1-5-2, the
    same bias 15), so the code shifted left by 8 is that float16's bits."""
    codes = np.asarray(codes, dtype=np.uint8)
    return (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float64)


def e5m2_encode(x):
    """The float8_e5m2 codes of float64 values already on the e5m2 grid (to_e5m2's results)."""
    return (np.asarray(x, dtype=np.float16).view(np.uint16) >> 8).astype(np.uint8)


def to_e5m2(x):
    """float64 numpy rounding onto the e5m2 grid (2 mantissa bits, exponents -14..15, subnormal
    step 2^-16), to nearest with ties to even; beyond 57344 + half a step: +-inf."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    e = np.maximum(np.frexp(mag)[1] - 1, -14)
    step = np.ldexp(1.0, e - 2)
    rounded = np.round(mag / step) * step  # numpy rounds half to even: the mantissa's last bit
    rounded = np.where(rounded > 57344.0, np.inf, rounded)
    return np.where(np.isnan(x), x, np.copysign(rounded, x))


def reference(q, k, v, scale=None):
    """float64 numpy (out, rowmax, rowsum) of the e5m2 codes q, k, v under k <= q, replaying the
    online softmax per TILE_N keys so that p is rounded (to_e5m2) under the same running max as
    in the kernel (a tile wholly in a row's future leaves the row's state as it was)."""
    qd, kd, vd = (e5m2_decode(t.numpy()) for t in (q, k, v))
    scale = 1.0 / math.sqrt(qd.shape[-1]) if scale is None else scale
    score = (qd @ kd.swapaxes(-1, -2)) * scale
    future = np.arange(kd.shape[1])[None, :] > np.arange(qd.shape[1])[:, None]
    score = np.where(future, -np.inf, score)
    m = np.full(score.shape[:-1] + (1,), -np.inf)
    l = np.zeros_like(m)
    o = np.zeros(score.shape[:-1] + (vd.shape[-1],))
    for c in range(0, score.shape[-1], TILE_N):
        block = score[..., c:c + TILE_N]
        m_new = np.maximum(m, block.max(-1, keepdims=True))
        alpha = np.exp(m - m_new)  # m_new is finite: every row sees key 0 in tile 0
        p = np.exp(block - m_new)
        l = l * alpha + p.sum(-1, keepdims=True)
        o = o * alpha + to_e5m2(p) @ vd[:, c:c + TILE_N]
        m = m_new
    return o / l, m[..., 0], l[..., 0]


def random_e5m2(shape, gen):
    """uint8 e5m2 codes of normal samples rounded to the grid (what bench_case feeds)."""
    x = torch.randn(shape, generator=gen, dtype=torch.float64).numpy()
    return torch.from_numpy(e5m2_encode(to_e5m2(x)))


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's masked manual attention on
    the decoded values (float32)."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q, k, v = (random_e5m2((b * h, n, d), gen) for n in (s1, s2, s2))
    outs = (torch.empty((b * h, s1, d)), torch.empty((b * h, s1)), torch.empty((b * h, s1)))
    qf, kf, vf = (torch.from_numpy(e5m2_decode(t.numpy())).float() for t in (q, k, v))
    future = torch.arange(s2)[None, :] > torch.arange(s1)[:, None]
    scale = 1.0 / math.sqrt(d)

    def manual():
        score = (torch.bmm(qf, kf.transpose(1, 2)) * scale).masked_fill(future, -math.inf)
        return torch.softmax(score, -1) @ vf

    # About half the score matrix is visible (S1 = S2): count the work done, not skipped.
    return {"run": lambda: flash_attn_fp8_causal(q, k, v, None, *outs), "torch": manual,
            "flops": 2.0 * b * h * s1 * s2 * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    gen = torch.Generator().manual_seed(0)
    q, k, v = (random_e5m2((2, n, 32), gen) for n in (70, 150, 150))
    got, want = flash_attn_fp8_causal(q, k, v), reference(q, k, v)
    for g, w, tol in zip(got, want, (2e-2, 1e-5, 1e-5)):
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)
