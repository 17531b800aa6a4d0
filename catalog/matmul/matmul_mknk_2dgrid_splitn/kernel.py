"""z = x.float() @ y.float()^T for x [M, K], y [N, K] on a 2-D grid of grid_m x grid_n blocks
(split-N): block (i, j) owns the j-th contiguous band of N tiles and every grid_m-th row tile, so
the y panel a block reads stays the same across its row tiles."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 64
TILE_K = 64


@asc2.jit
def matmul_mknk_2dgrid_splitn_kernel(x_ptr, y_ptr, z_ptr, m, n, k, grid_n, xs0, xs1, ys0, ys1,
                                     zs0, zs1, tile_m: asc.ConstExpr[int],
                                     tile_n: asc.ConstExpr[int], tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [n, k], [ys0, ys1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    grid_m = asc2.block_num() // grid_n
    bm = asc2.block_idx() // grid_n
    bn = asc2.block_idx() % grid_n
    # The N tiles split into grid_n contiguous bands; the last ones may be short or empty.
    tiles_n = asc2.ceildiv(n, tile_n)
    band = asc2.ceildiv(tiles_n, grid_n)
    band_end = asc2.minimum(tiles_n, (bn + 1) * band)
    for i in asc2.range(bm, asc2.ceildiv(m, tile_m), grid_m):
        for j in asc2.range(bn * band, band_end):
            acc = asc2.zeros([tile_m, tile_n], asc2.float32)
            for kt in asc2.range(asc2.ceildiv(k, tile_k)):
                x = asc2.load(x_gm, [tile_m, tile_k], offsets=[i * tile_m, kt * tile_k])
                y = asc2.load(y_gm, [tile_n, tile_k], offsets=[j * tile_n, kt * tile_k])
                acc = asc2.matmul_acc(acc, x, y.T)
            asc2.store(acc, z_gm, offsets=[i * tile_m, j * tile_n])


def matmul_mknk_2dgrid_splitn(x, y, out=None, grid=(1, 2)):
    """x: [M, K], y: [N, K] (float32/float16/bfloat16, the same dtype, any strides); returns
    z [M, N] float32 computed by grid = (grid_m, grid_n) blocks (written into ``out`` when
    given)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [M, K] tensor, got {getattr(x, 'shape', type(x))}")
    m, k = x.shape
    if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[1] != k:
        raise ValueError(f"y: expected [N, {k}], got {getattr(y, 'shape', type(y))}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or y.dtype != x.dtype:
        raise TypeError(f"x, y: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {y.dtype}")
    if (len(grid) != 2 or not all(isinstance(g, int) and 1 <= g <= 4096 for g in grid)):
        raise ValueError(f"grid: expected (grid_m, grid_n), integers in 1..4096, got {grid}")
    n = y.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    if m > 0 and n > 0:
        matmul_mknk_2dgrid_splitn_kernel[grid[0] * grid[1]](
            x, y, out, m, n, k, grid[1], *x.stride(), *y.stride(), *out.stride(), TILE_M, TILE_N,
            TILE_K)
    return out


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((m, k), generator=gen).to(getattr(torch, dtype))
    y = torch.randn((n, k), generator=gen).to(getattr(torch, dtype))
    out = torch.empty((m, n), dtype=torch.float32)
    xf, yf = x.float(), y.float()
    return {"run": lambda: matmul_mknk_2dgrid_splitn(x, y, out),
            "torch": lambda: xf @ yf.T,
            "flops": 2.0 * m * n * k}


def reference(x, y):
    """float64 numpy x @ y^T."""
    return x.double().numpy() @ y.double().numpy().T


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.randn((37, 70)), torch.randn((145, 70))
    np.testing.assert_allclose(matmul_mknk_2dgrid_splitn(x, y, grid=(2, 2)).numpy(),
                               reference(x, y), rtol=1e-4, atol=1e-4)
