"""qk = q.float() @ k.float()^T for every (batch·head): the smallest catalog kernel, a tiled
batched matmul whose blocks share out (bh, row tile, column tile) triples."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 64


@asc2.jit
def qk_matmul_batched_kernel(q_ptr, k_ptr, out_ptr, bh, s1, s2,
                             qs0, qs1, qs2, ks0, ks1, ks2, os0, os1, os2,
                             d: asc.ConstExpr[int], tile_m: asc.ConstExpr[int],
                             tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    out_gm = asc2.tensor(out_ptr, [bh, s1, s2], [os0, os1, os2])
    tiles_m = asc2.ceildiv(s1, tile_m)
    tiles_n = asc2.ceildiv(s2, tile_n)
    per_head = tiles_m * tiles_n
    for t in asc2.range(asc2.block_idx(), bh * per_head, asc2.block_num()):
        b = t // per_head
        row = (t % per_head) // tiles_n * tile_m
        col = t % tiles_n * tile_n
        # Rows past s1 and columns past s2 load zeros and are never stored.
        q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        qk = asc2.matmul(q, k.T)
        asc2.store(qk.reshape(1, tile_m, tile_n), out_gm, offsets=[b, row, col])


def qk_matmul_batched(q, k, out=None, core_num=0):
    """q: [BH, S1, D], k: [BH, S2, D] (float32/float16/bfloat16, any strides); returns
    out [BH, S1, S2] float32 (written into ``out`` when given)."""
    bh, s1, d = q.shape
    if k.dim() != 3 or k.shape[0] != bh or k.shape[2] != d:
        raise ValueError(f"k: expected [{bh}, S2, {d}], got {list(k.shape)}")
    if k.dtype != q.dtype:
        raise TypeError(f"k: expected {q.dtype} like q, got {k.dtype}")
    s2 = k.shape[1]
    if out is None:
        out = torch.empty((bh, s1, s2), dtype=torch.float32)
    if list(out.shape) != [bh, s1, s2] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{bh}, {s1}, {s2}], got {out.dtype} "
                         f"{list(out.shape)}")
    qk_matmul_batched_kernel[core_num](q, k, out, bh, s1, s2, *q.stride(), *k.stride(),
                                       *out.stride(), d, TILE_M, TILE_N)
    return out



def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    q = torch.randn((b * h, s1, d), generator=gen).to(getattr(torch, dtype))
    k = torch.randn((b * h, s2, d), generator=gen).to(getattr(torch, dtype))
    out = torch.empty((b * h, s1, s2), dtype=torch.float32)
    qf, kf = q.float(), k.float()
    return {"run": lambda: qk_matmul_batched(q, k, out),
            "torch": lambda: torch.bmm(qf, kf.transpose(1, 2)),
            "flops": 2.0 * b * h * s1 * s2 * d}



def reference(q, k):
    """float64 numpy qk."""
    return q.double().numpy() @ k.double().numpy().transpose(0, 2, 1)


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, k = torch.randn((2, 37, 32)).half(), torch.randn((2, 70, 32)).half()
    np.testing.assert_allclose(qk_matmul_batched(q, k).numpy(), reference(q, k), rtol=1e-4,
                               atol=1e-4)
