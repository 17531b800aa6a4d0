"""Absorbed multi-head latent attention (MLA) decode: all H query heads of a batch row attend to
one shared latent cache (k_nope [S, Dn], also the value) plus a shared rope key (k_rope [S, Dr]).
The heads are the rows of the query tile, so each latent tile is loaded once for all of them.
The probabilities enter P·V as e4m3(16·p), and the 16 is not undone: out = 16·softmax·k_nope."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_H = 64  # query heads per tile: all of them at the validated H = 64
TILE_N = 64  # latent rows per step ([TILE_N, Dn] float32 = 128 KiB at Dn = 512)
P_SCALE = 16.0  # part of the contract: e4m3(16·p) feeds P·V and stays in the output
MASKED = -1e30  # finite: exp(MASKED - m) is 0, never NaN


@asc2.jit
def mla_decode_kernel(qn_ptr, qr_ptr, kn_ptr, kr_ptr, o_ptr, batch, h, s, scale, scale_rope,
                      qns0, qns1, qns2, qrs0, qrs1, qrs2, kns0, kns1, kns2, krs0, krs1, krs2,
                      os0, os1, os2, dn: asc.ConstExpr[int], dr: asc.ConstExpr[int],
                      tile_h: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    qn_gm = asc2.tensor(qn_ptr, [batch, h, dn], [qns0, qns1, qns2])
    qr_gm = asc2.tensor(qr_ptr, [batch, h, dr], [qrs0, qrs1, qrs2])
    kn_gm = asc2.tensor(kn_ptr, [batch, s, dn], [kns0, kns1, kns2])
    kr_gm = asc2.tensor(kr_ptr, [batch, s, dr], [krs0, krs1, krs2])
    o_gm = asc2.tensor(o_ptr, [batch, h, dn], [os0, os1, os2])
    tiles_h = asc2.ceildiv(h, tile_h)
    for t in asc2.range(asc2.block_idx(), batch * tiles_h, asc2.block_num()):
        b = t // tiles_h
        head = t % tiles_h * tile_h
        q_n = asc2.load(qn_gm, [1, tile_h, dn], offsets=[b, head, 0]).reshape(tile_h, dn)
        q_n = q_n.to(asc2.float32)
        q_r = asc2.load(qr_gm, [1, tile_h, dr], offsets=[b, head, 0]).reshape(tile_h, dr)
        q_r = q_r.to(asc2.float32) * scale_rope  # folded into the query once, not per score
        m = asc2.full([tile_h, 1], MASKED, asc2.float32)
        l = asc2.zeros([tile_h, 1], asc2.float32)
        o = asc2.zeros([tile_h, dn], asc2.float32)
        for j in asc2.range(asc2.ceildiv(s, tile_n)):
            col = j * tile_n
            k_n = asc2.load(kn_gm, [1, tile_n, dn], offsets=[b, col, 0]).reshape(tile_n, dn)
            k_r = asc2.load(kr_gm, [1, tile_n, dr], offsets=[b, col, 0]).reshape(tile_n, dr)
            k_n = k_n.to(asc2.float32)  # the key and, below, the value
            score = asc2.matmul_acc(asc2.matmul(q_n, k_n.T), q_r, k_r.to(asc2.float32).T)
            score = asc2.where(asc2.arange(tile_n) + col < s, score * scale, MASKED)
            m_new = asc2.maximum(m, score.max(1, keep_dims=True))
            alpha = asc2.exp(m - m_new)
            p = asc2.exp(score - m_new)
            l = l * alpha + p.sum(1, keep_dims=True)
            p_q = (p * P_SCALE).to(asc2.float8_e4m3fn).to(asc2.float32)  # <= 16: no saturation
            o = asc2.matmul_acc(o * alpha, p_q, k_n)
            m = m_new
        asc2.store((o / l).reshape(1, tile_h, dn), o_gm, offsets=[b, head, 0])


def mla_decode(q_nope, q_rope, k_nope, k_rope, scale=None, scale_rope=1.0, out=None,
               core_num=0):
    """q_nope: [B, H, Dn], q_rope: [B, H, Dr], k_nope (the latent cache, also the value):
    [B, S, Dn], k_rope: [B, S, Dr] (float16/bfloat16/float32, one dtype, any strides); returns
    out [B, H, Dn] float32 = Σ_s e4m3(16·p_s) k_nope_s / Σ_s p_s with
    p = softmax((q_nope k_nope^T + scale_rope · q_rope k_rope^T) · scale), scale default
    1/sqrt(Dn + Dr)."""
    if q_nope.dim() != 3:
        raise ValueError(f"q_nope: expected [B, H, Dn], got {list(q_nope.shape)}")
    batch, h, dn = q_nope.shape
    if q_rope.dim() != 3 or list(q_rope.shape[:2]) != [batch, h]:
        raise ValueError(f"q_rope: expected [{batch}, {h}, Dr], got {list(q_rope.shape)}")
    dr = q_rope.shape[2]
    if k_nope.dim() != 3 or k_nope.shape[0] != batch or k_nope.shape[2] != dn:
        raise ValueError(f"k_nope: expected [{batch}, S, {dn}], got {list(k_nope.shape)}")
    s = k_nope.shape[1]
    if s == 0:
        raise ValueError("k_nope: S must be at least 1 (a softmax over no keys is undefined)")
    if list(k_rope.shape) != [batch, s, dr]:
        raise ValueError(f"k_rope: expected [{batch}, {s}, {dr}], got {list(k_rope.shape)}")
    for name, t in (("q_rope", q_rope), ("k_nope", k_nope), ("k_rope", k_rope)):
        if t.dtype != q_nope.dtype:
            raise TypeError(f"{name}: expected {q_nope.dtype} like q_nope, got {t.dtype}")
    scale = 1.0 / math.sqrt(dn + dr) if scale is None else float(scale)
    if out is None:
        out = torch.empty((batch, h, dn), dtype=torch.float32)
    if list(out.shape) != [batch, h, dn] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{batch}, {h}, {dn}], got {out.dtype} "
                         f"{list(out.shape)}")
    mla_decode_kernel[core_num](q_nope, q_rope, k_nope, k_rope, out, batch, h, s, scale,
                                float(scale_rope), *q_nope.stride(), *q_rope.stride(),
                                *k_nope.stride(), *k_rope.stride(), *out.stride(), dn, dr,
                                TILE_H, TILE_N)
    return out


def to_e4m3(x):
    """float64 numpy rounding onto the float8_e4m3fn grid (3 mantissa bits, exponents -6..8,
    subnormal step 2^-9), to nearest with ties to even, saturating at +-448."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    e = np.maximum(np.frexp(mag)[1] - 1, -6)
    step = np.ldexp(1.0, e - 3)
    rounded = np.minimum(np.round(mag / step) * step, 448.0)  # numpy: half to even
    return np.where(np.isnan(x), x, np.copysign(rounded, x))


def reference(q_nope, q_rope, k_nope, k_rope, scale=None, scale_rope=1.0):
    """float64 numpy out [B, H, Dn], replaying the online softmax per TILE_N latent rows so that
    16·p is rounded (to_e4m3) under the same running max as in the kernel."""
    qn, qr, kn, kr = (t.double().numpy() for t in (q_nope, q_rope, k_nope, k_rope))
    scale = 1.0 / math.sqrt(qn.shape[-1] + qr.shape[-1]) if scale is None else scale
    score = (qn @ kn.swapaxes(1, 2) + scale_rope * (qr @ kr.swapaxes(1, 2))) * scale
    m = np.full(score.shape[:-1] + (1,), -np.inf)
    l = np.zeros_like(m)
    o = np.zeros(qn.shape)
    for c in range(0, score.shape[-1], TILE_N):
        block = score[..., c:c + TILE_N]
        m_new = np.maximum(m, block.max(-1, keepdims=True))
        alpha = np.exp(m - m_new)
        p = np.exp(block - m_new)
        l = l * alpha + p.sum(-1, keepdims=True)
        o = o * alpha + to_e4m3(p * P_SCALE) @ kn[:, c:c + TILE_N]
        m = m_new
    return o / l


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch's manual absorbed MLA (float32,
    no e4m3 rounding: the same matmuls and exponentials)."""
    b, h, s, dn, dr = shape
    gen = torch.Generator().manual_seed(0)
    qn, qr = (torch.randn((b, h, n), generator=gen).to(getattr(torch, dtype)) for n in (dn, dr))
    kn, kr = (torch.randn((b, s, n), generator=gen).to(getattr(torch, dtype)) for n in (dn, dr))
    out = torch.empty((b, h, dn))
    qnf, qrf, knf, krf = (t.float() for t in (qn, qr, kn, kr))
    scale = 1.0 / math.sqrt(dn + dr)

    def manual():
        score = (qnf @ knf.transpose(1, 2) + qrf @ krf.transpose(1, 2)) * scale
        return 16.0 * torch.softmax(score, -1) @ knf

    return {"run": lambda: mla_decode(qn, qr, kn, kr, out=out), "torch": manual,
            "flops": 2.0 * b * h * s * (2 * dn + dr)}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    qn, qr = torch.randn((1, 8, 32)).half(), torch.randn((1, 8, 16)).half()
    kn, kr = torch.randn((1, 70, 32)).half(), torch.randn((1, 70, 16)).half()
    np.testing.assert_allclose(mla_decode(qn, qr, kn, kr, scale_rope=0.5).numpy(),
                               reference(qn, qr, kn, kr, None, 0.5), rtol=2e-2, atol=2e-2)
