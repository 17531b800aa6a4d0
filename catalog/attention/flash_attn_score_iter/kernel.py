"""flash_attn_score with a running row max: the [TILE_M, BLOCK_N] score blocks of a row tile
are visited left to right and p_j = exp(s_j - m_j), with m_j the row max of blocks 0..j, is
stored as float16. The running state of flash attention without its sum and P·V stages."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
BLOCK_N = 128  # part of the contract: the running max advances one 128-column block at a time
MASKED = -1e30  # finite: the identity of the running max, and exp(MASKED - m) is 0, never NaN


@asc2.jit
def flash_attn_score_iter_kernel(q_ptr, k_ptr, p_ptr, bh, s1, s2, scale,
                                 qs0, qs1, qs2, ks0, ks1, ks2, ps0, ps1, ps2,
                                 d: asc.ConstExpr[int], tile_m: asc.ConstExpr[int],
                                 block_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    p_gm = asc2.tensor(p_ptr, [bh, s1, s2], [ps0, ps1, ps2])
    tiles_m = asc2.ceildiv(s1, tile_m)
    # One block step owns a whole row tile: the running max is carried across its column loop.
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        m = asc2.full([tile_m, 1], MASKED, asc2.float32)
        for j in asc2.range(asc2.ceildiv(s2, block_n)):
            col = j * block_n
            k = asc2.load(k_gm, [1, block_n, d], offsets=[b, col, 0]).reshape(block_n, d)
            score = asc2.matmul(q, k.T) * scale
            score = asc2.where(asc2.arange(block_n) + col < s2, score, MASKED)
            m = asc2.maximum(m, score.max(1, keep_dims=True))
            p = asc2.exp(score - m)
            asc2.store(p.to(asc2.float16).reshape(1, tile_m, block_n), p_gm,
                       offsets=[b, row, col])


def flash_attn_score_iter(q, k, scale=None, out=None, core_num=0):
    """q: [BH, S1, D], k: [BH, S2, D] (float16/bfloat16/float32, any strides); returns
    p [BH, S1, S2] float16 with p = exp(s - the row max of s over the 128-column blocks up to
    and including this column's block)."""
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, S1, D], got {list(q.shape)}")
    bh, s1, d = q.shape
    if k.dim() != 3 or k.shape[0] != bh or k.shape[2] != d:
        raise ValueError(f"k: expected [{bh}, S2, {d}], got {list(k.shape)}")
    if k.dtype != q.dtype:
        raise TypeError(f"k: expected {q.dtype} like q, got {k.dtype}")
    s2 = k.shape[1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if out is None:
        out = torch.empty((bh, s1, s2), dtype=torch.float16)
    if list(out.shape) != [bh, s1, s2] or out.dtype != torch.float16:
        raise ValueError(f"out: expected float16 [{bh}, {s1}, {s2}], got {out.dtype} "
                         f"{list(out.shape)}")
    flash_attn_score_iter_kernel[core_num](q, k, out, bh, s1, s2, scale, *q.stride(),
                                           *k.stride(), *out.stride(), d, TILE_M, BLOCK_N)
    return out


def reference(q, k, scale=None):
    """float64 numpy p, each BLOCK_N-column block against the running max of blocks 0..j."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score = (q.double().numpy() @ k.double().numpy().swapaxes(-1, -2)) * scale
    p = np.empty_like(score)
    m = np.full(score.shape[:-1] + (1,), -np.inf)
    for c in range(0, score.shape[-1], BLOCK_N):
        block = score[..., c:c + BLOCK_N]
        m = np.maximum(m, block.max(-1, keepdims=True))
        p[..., c:c + BLOCK_N] = np.exp(block - m)
    return p


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch doing the same (float32)."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q, k = (torch.randn((b * h, n, d), generator=gen).to(getattr(torch, dtype)) for n in (s1, s2))
    out = torch.empty((b * h, s1, s2), dtype=torch.float16)
    qf, kf = q.float(), k.float()
    scale = 1.0 / math.sqrt(d)

    def manual():  # s2 a multiple of BLOCK_N at the bench shape
        score = (torch.bmm(qf, kf.transpose(1, 2)) * scale).view(b * h, s1, -1, BLOCK_N)
        running = torch.cummax(score.amax(-1, keepdim=True), dim=2).values
        return torch.exp(score - running).half()

    return {"run": lambda: flash_attn_score_iter(q, k, out=out), "torch": manual,
            "flops": 2.0 * b * h * s1 * s2 * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k = (torch.randn((2, n, 32)).half() for n in (70, 300))
    np.testing.assert_allclose(flash_attn_score_iter(q, k).float().numpy(), reference(q, k),
                               rtol=1e-3, atol=1e-3)
