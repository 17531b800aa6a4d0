"""Decode attention on float8_e4m3fn q, k, v (uint8 storage of the codes) with per-tensor
scales: the score is scaled by scale_q·scale_k, P·V consumes (16·p) rounded to e4m3 and the
result is rescaled by scale_v / 16. One query row per batch·head, float32 online-softmax state,
keys past S masked in the last tile."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_N = 128
P_SCALE = 16.0  # part of the contract: 16·p in [0, 16] uses e4m3's 3 mantissa bits above 2^-6
MASKED = -1e30  # finite: exp(MASKED - m) is 0, never NaN


@asc2.jit
def decode_attn_fp8_scaled_kernel(q_ptr, k_ptr, v_ptr, o_ptr, bh, s, qk_scale, out_scale,
                                  qs0, qs1, ks0, ks1, ks2, vs0, vs1, vs2, os0, os1,
                                  d: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, d], [qs0, qs1])  # float8_e4m3fn elements
    k_gm = asc2.tensor(k_ptr, [bh, s, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, d], [os0, os1])
    for b in asc2.range(asc2.block_idx(), bh, asc2.block_num()):
        q = asc2.load(q_gm, [1, d], offsets=[b, 0]).to(asc2.float32)  # exact: e4m3 in float32
        m = asc2.full([1, 1], MASKED, asc2.float32)
        l = asc2.zeros([1, 1], asc2.float32)
        o = asc2.zeros([1, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(s, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            score = asc2.matmul(q, k.to(asc2.float32).T) * qk_scale
            score = asc2.where(asc2.arange(tile_n) + col < s, score, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)
            # 16·p <= 16 never reaches e4m3's saturation (448); to nearest, ties to even.
            p_q = (p * P_SCALE).to(asc2.float8_e4m3fn).to(asc2.float32)
            o = asc2.matmul_acc(o * alpha, p_q, v.to(asc2.float32))
            m = m_new
        asc2.store(o * out_scale / l, o_gm, offsets=[b, 0])


def decode_attn_fp8_scaled(q, k, v, scale_q, scale_k, scale_v, scale=None, out=None,
                           core_num=0):
    """q: [BH, D], k, v: [BH, S, D], torch.uint8 tensors holding float8_e4m3fn codes (torch 1.13
    has no fp8 dtype; any strides), dequantised as q·scale_q, k·scale_k, v·scale_v (Python
    floats); returns out = softmax(q k^T · scale_q·scale_k·scale) v·scale_v as float32 [BH, D],
    with P·V on e4m3(16·p) / 16."""
    if q.dim() != 2:
        raise ValueError(f"q: expected [BH, D], got {list(q.shape)}")
    bh, d = q.shape
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype != torch.uint8:
            raise TypeError(f"{name}: expected torch.uint8 storage of float8_e4m3fn codes, got "
                            f"{t.dtype}")
        if name != "q" and (t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d):
            raise ValueError(f"{name}: expected [{bh}, S, {d}], got {list(t.shape)}")
    if k.shape[1] != v.shape[1]:
        raise ValueError(f"v: expected S = {k.shape[1]} like k, got {v.shape[1]}")
    if k.shape[1] == 0:
        raise ValueError("k: S must be at least 1 (a softmax over no keys is undefined)")
    for name, value in (("scale_q", scale_q), ("scale_k", scale_k), ("scale_v", scale_v)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{name}: expected a finite float, got {value}")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((bh, d), dtype=torch.float32)
    if list(out.shape) != [bh, d] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{bh}, {d}], got {out.dtype} {list(out.shape)}")
    e4m3 = asc2.float8_e4m3fn
    qk_scale = scale * float(scale_q) * float(scale_k)
    decode_attn_fp8_scaled_kernel[core_num](
        asc2.reinterpret(q, e4m3), asc2.reinterpret(k, e4m3), asc2.reinterpret(v, e4m3), out,
        bh, k.shape[1], qk_scale, float(scale_v) / P_SCALE, *q.stride(), *k.stride(),
        *v.stride(), *out.stride(), d, TILE_N)
    return out


def _e4m3_values():
    """The float64 value of each of the 256 float8_e4m3fn codes: 1-4-3, bias 7, subnormals
    m·2^-9, no infinities, NaN at S.1111.111."""
    code = np.arange(256)
    sign = np.where(code & 0x80, -1.0, 1.0)
    e, m = (code >> 3) & 0xF, code & 0x7
    mag = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * np.exp2(e - 7.0))
    return np.where((code & 0x7F) == 0x7F, np.nan, sign * mag)


E4M3_VALUES = _e4m3_values()


def e4m3_decode(codes):
    return E4M3_VALUES[np.asarray(codes, dtype=np.uint8)]


def e4m3_encode(x):
    """The float8_e4m3fn codes of float64 values already on the grid (to_e4m3's results); -0
    and 0 both give code 0."""
    finite = np.flatnonzero(~np.isnan(E4M3_VALUES) & ~((E4M3_VALUES == 0) & (np.arange(256) > 0)))
    order = finite[np.argsort(E4M3_VALUES[finite])]
    x = np.asarray(x, dtype=np.float64)
    at = np.searchsorted(E4M3_VALUES[order], x)
    codes = order[np.minimum(at, len(order) - 1)]
    if not np.array_equal(E4M3_VALUES[codes], x):
        raise ValueError("e4m3_encode: values must lie on the e4m3 grid")
    return codes.astype(np.uint8)


def to_e4m3(x):
    """float64 numpy rounding onto the float8_e4m3fn grid (3 mantissa bits, exponents -6..8,
    subnormal step 2^-9), to nearest with ties to even, saturating at +-448."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    e = np.maximum(np.frexp(mag)[1] - 1, -6)
    step = np.ldexp(1.0, e - 3)
    rounded = np.minimum(np.round(mag / step) * step, 448.0)  # numpy: half to even
    return np.where(np.isnan(x), x, np.copysign(rounded, x))


def reference(q, k, v, scale_q, scale_k, scale_v, scale=None):
    """float64 numpy out [BH, D] of the e4m3 codes, replaying the online softmax per TILE_N keys
    so that 16·p is rounded (to_e4m3) under the same running max as in the kernel."""
    qd, kd, vd = (e4m3_decode(t.numpy()) for t in (q, k, v))
    scale = 1.0 / math.sqrt(qd.shape[-1]) if scale is None else scale
    score = (kd @ qd[:, :, None])[:, :, 0] * (scale * scale_q * scale_k)
    m = np.full((score.shape[0], 1), -np.inf)
    l = np.zeros_like(m)
    o = np.zeros((score.shape[0], vd.shape[-1]))
    for c in range(0, score.shape[-1], TILE_N):
        block = score[:, c:c + TILE_N]
        m_new = np.maximum(m, block.max(-1, keepdims=True))
        alpha = np.exp(m - m_new)
        p = np.exp(block - m_new)
        l = l * alpha + p.sum(-1, keepdims=True)
        o = o * alpha + (to_e4m3(p * P_SCALE)[:, None, :] @ vd[:, c:c + TILE_N])[:, 0]
        m = m_new
    return o * scale_v / P_SCALE / l


def random_e4m3(shape, gen):
    """uint8 e4m3 codes of normal samples rounded to the grid (what bench_case feeds)."""
    x = torch.randn(shape, generator=gen, dtype=torch.float64).numpy()
    return torch.from_numpy(e4m3_encode(to_e4m3(x)))


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's manual attention on the
    dequantised values (float32)."""
    b, h, s, d = shape
    gen = torch.Generator().manual_seed(0)
    q = random_e4m3((b * h, d), gen)
    k, v = (random_e4m3((b * h, s, d), gen) for _ in "kv")
    out = torch.empty((b * h, d), dtype=torch.float32)
    qf, kf, vf = (torch.from_numpy(e4m3_decode(t.numpy())).float() for t in (q, k, v))
    scale = 1.0 / math.sqrt(d)

    def manual():
        score = torch.bmm(kf * 0.5, (qf * 0.25)[:, :, None])[:, :, 0] * scale
        return torch.bmm(torch.softmax(score, -1)[:, None, :], vf * 2.0)[:, 0]

    return {"run": lambda: decode_attn_fp8_scaled(q, k, v, 0.25, 0.5, 2.0, out=out),
            "torch": manual, "flops": 4.0 * b * h * s * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    gen = torch.Generator().manual_seed(0)
    q, k, v = random_e4m3((4, 32), gen), random_e4m3((4, 150, 32), gen), \
        random_e4m3((4, 150, 32), gen)
    np.testing.assert_allclose(decode_attn_fp8_scaled(q, k, v, 0.5, 0.25, 2.0).numpy(),
                               reference(q, k, v, 0.5, 0.25, 2.0), rtol=2e-2, atol=2e-2)
