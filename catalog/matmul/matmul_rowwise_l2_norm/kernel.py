"""out = z / sqrt(sum(z^2, dim=1)) with z = x @ w^T, x [M, K], w [N, K], any N and K: two passes
per row tile. Pass 1 computes each N tile of z, stores it unnormalised into out and adds its
squares to the row's float32 sum; pass 2 reloads the tiles and scales them. An all-zero row of z
gives 0 (not 0/0)."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128
TILE_K = 64


@asc2.jit
def matmul_rowwise_l2_norm_kernel(x_ptr, w_ptr, z_ptr, m, n, k, xs0, xs1, ws0, ws1, zs0, zs1,
                                  tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int],
                                  tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    w_gm = asc2.tensor(w_ptr, [n, k], [ws0, ws1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    tiles_n = asc2.ceildiv(n, tile_n)
    for i in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m), asc2.block_num()):
        row = i * tile_m
        squares = asc2.zeros([tile_m, 1], asc2.float32)
        for j in asc2.range(tiles_n):
            acc = asc2.zeros([tile_m, tile_n], asc2.float32)
            for kt in asc2.range(asc2.ceildiv(k, tile_k)):
                x = asc2.load(x_gm, [tile_m, tile_k], offsets=[row, kt * tile_k])
                w = asc2.load(w_gm, [tile_n, tile_k], offsets=[j * tile_n, kt * tile_k])
                acc = asc2.matmul_acc(acc, x, w.T)
            # Columns past n are 0 and add nothing; out holds z until pass 2 rescales it.
            squares = squares + (acc * acc).sum(1, keep_dims=True)
            asc2.store(acc, z_gm, offsets=[row, j * tile_n])
        inv = asc2.where(squares > 0, asc2.rsqrt(squares), 0.0)
        for j in asc2.range(tiles_n):
            # This block's own stores of pass 1, read back exactly (float32 round trip).
            z = asc2.load(z_gm, [tile_m, tile_n], offsets=[row, j * tile_n])
            asc2.store(z * inv, z_gm, offsets=[row, j * tile_n])


def matmul_rowwise_l2_norm(x, w, out=None, core_num=0):
    """x: [M, K], w: [N, K] (float32/float16/bfloat16, the same dtype, any strides); returns
    z / ||z||_2 per row, z = x @ w^T, [M, N] float32 (into ``out`` when given). A row whose z
    is all zero gives zeros."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [M, K] tensor, got {getattr(x, 'shape', type(x))}")
    m, k = x.shape
    if not isinstance(w, torch.Tensor) or w.dim() != 2 or w.shape[1] != k:
        raise ValueError(f"w: expected [N, {k}], got {getattr(w, 'shape', type(w))}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or w.dtype != x.dtype:
        raise TypeError(f"x, w: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {w.dtype}")
    n = w.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    if m > 0 and n > 0:
        matmul_rowwise_l2_norm_kernel[core_num](x, w, out, m, n, k, *x.stride(), *w.stride(),
                                                *out.stride(), TILE_M, TILE_N, TILE_K)
    return out


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((m, k), generator=gen).to(getattr(torch, dtype))
    w = torch.randn((n, k), generator=gen).to(getattr(torch, dtype))
    out = torch.empty((m, n), dtype=torch.float32)
    xf, wf = x.float(), w.float()
    return {"run": lambda: matmul_rowwise_l2_norm(x, w, out),
            "torch": lambda: torch.nn.functional.normalize(xf @ wf.T, dim=1),
            "flops": 2.0 * m * n * k}


def reference(x, w):
    """float64 numpy z / sqrt(sum z^2) per row (all-zero rows: 0)."""
    z = x.double().numpy() @ w.double().numpy().T
    norm = np.sqrt((z * z).sum(1, keepdims=True))
    return np.divide(z, norm, out=np.zeros_like(z), where=norm > 0)


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, w = torch.randn((37, 70)), torch.randn((300, 70))
    np.testing.assert_allclose(matmul_rowwise_l2_norm(x, w).numpy(), reference(x, w), rtol=1e-4,
                               atol=1e-4)
