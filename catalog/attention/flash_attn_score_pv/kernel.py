"""The score and P·V stages of flash attention without the running sum: per 128-key tile j,
p_j = exp(s_j - m_j).half() under the running row max m_j, and pv_j = p_j.float() @ v_j is
stored as its own [S1, D] slice of pv [BH, NT, S1, D] (NT = ceil(S2 / 128)); nothing is
rescaled or summed across tiles."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128  # part of the contract: one pv slice and one max step per 128 keys
MASKED = -1e30  # finite: the identity of the running max, and exp(MASKED - m) is 0, never NaN


@asc2.jit
def flash_attn_score_pv_kernel(q_ptr, k_ptr, v_ptr, pv_ptr, bh, s1, s2, scale,
                               qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2,
                               ps0, ps1, ps2, ps3, d: asc.ConstExpr[int],
                               tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    tiles_n = asc2.ceildiv(s2, tile_n)
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    pv_gm = asc2.tensor(pv_ptr, [bh, tiles_n, s1, d], [ps0, ps1, ps2, ps3])
    tiles_m = asc2.ceildiv(s1, tile_m)
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        m = asc2.full([tile_m, 1], MASKED, asc2.float32)
        for j in asc2.range(tiles_n):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            score = asc2.matmul(q, k.T) * scale
            score = asc2.where(asc2.arange(tile_n) + col < s2, score, MASKED)
            m = asc2.maximum(m, score.max(1, keep_dims=True))
            p = asc2.exp(score - m).to(asc2.float16).to(asc2.float32)
            # v's rows past S2 load as 0 and their p is 0: the tail adds nothing.
            pv = asc2.matmul(p, v.to(asc2.float32))
            asc2.store(pv.reshape(1, 1, tile_m, d), pv_gm, offsets=[b, j, row, 0])


def flash_attn_score_pv(q, k, v, scale=None, out=None, core_num=0):
    """q: [BH, S1, D], k, v: [BH, S2, D] (float16/bfloat16/float32, any strides); returns
    pv [BH, NT, S1, D] float32, NT = ceil(S2 / 128), with pv[:, j] = exp(s_j - m_j).half() @ v_j
    and m_j the row max of the score over keys 0 .. 128·j + 127."""
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
    s2 = k.shape[1]
    tiles_n = -(-s2 // TILE_N)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((bh, tiles_n, s1, d), dtype=torch.float32)
    if list(out.shape) != [bh, tiles_n, s1, d] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{bh}, {tiles_n}, {s1}, {d}], got {out.dtype} "
                         f"{list(out.shape)}")
    flash_attn_score_pv_kernel[core_num](q, k, v, out, bh, s1, s2, scale, *q.stride(),
                                         *k.stride(), *v.stride(), *out.stride(), d, TILE_M,
                                         TILE_N)
    return out


def reference(q, k, v, scale=None):
    """float64 numpy pv [BH, NT, S1, D]: the running max per TILE_N keys, p rounded to float16
    (numpy's float64 -> float16, to nearest even) as the contract's value path."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score = (q.double().numpy() @ k.double().numpy().swapaxes(-1, -2)) * scale
    vd = v.double().numpy()
    m = np.full(score.shape[:-1] + (1,), -np.inf)
    slices = []
    for c in range(0, score.shape[-1], TILE_N):
        block = score[..., c:c + TILE_N]
        m = np.maximum(m, block.max(-1, keepdims=True))
        p = np.exp(block - m).astype(np.float16).astype(np.float64)
        slices.append(p @ vd[:, c:c + TILE_N])
    return np.stack(slices, axis=1)


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch doing the same (float32)."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn((b * h, n, d), generator=gen).to(getattr(torch, dtype))
               for n in (s1, s2, s2))
    out = torch.empty((b * h, -(-s2 // TILE_N), s1, d))
    qf, kf, vf = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(d)

    def manual():  # s2 a multiple of TILE_N at the bench shape
        score = (torch.bmm(qf, kf.transpose(1, 2)) * scale).view(b * h, s1, -1, TILE_N)
        running = torch.cummax(score.amax(-1, keepdim=True), dim=2).values
        p = torch.exp(score - running).half().float().transpose(1, 2)  # [BH, NT, S1, TILE_N]
        return p @ vf.view(b * h, -1, TILE_N, d)

    return {"run": lambda: flash_attn_score_pv(q, k, v, out=out), "torch": manual,
            "flops": 4.0 * b * h * s1 * s2 * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k, v = (torch.randn((2, n, 32)).half() for n in (70, 300, 300))
    np.testing.assert_allclose(flash_attn_score_pv(q, k, v).numpy(), reference(q, k, v),
                               rtol=1e-3, atol=1e-3)
