"""z = x.float() @ y.float()^T + 1 for x [M, K], y [N, K], split-K: the grid is (output tile,
K slice) pairs; each pair's float32 partial product is added into the zeroed output with
atomic_add, and the pair of slice 0 adds the epilogue's +1, so every element gets it once."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 64
TILE_K = 64


@asc2.jit
def matmul_mknk_2dgrid_splitk_add1_kernel(x_ptr, y_ptr, z_ptr, m, n, k, split_k, xs0, xs1, ys0,
                                          ys1, zs0, zs1, tile_m: asc.ConstExpr[int],
                                          tile_n: asc.ConstExpr[int],
                                          tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [n, k], [ys0, ys1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    tiles_n = asc2.ceildiv(n, tile_n)
    tiles_k = asc2.ceildiv(k, tile_k)
    slice_tiles = asc2.ceildiv(tiles_k, split_k)  # K tiles per slice; the last slices short
    tiles = asc2.ceildiv(m, tile_m) * tiles_n
    # Slice-major: blocks running at the same time take different output tiles of one slice,
    # so their atomic additions never contend for the same cache lines (tile-major, block 0
    # and block 1 took two slices of one tile at once: every addition a line transfer).
    for u in asc2.range(asc2.block_idx(), tiles * split_k, asc2.block_num()):
        t = u % tiles
        part = u // tiles
        row = t // tiles_n * tile_m
        col = t % tiles_n * tile_n
        acc = asc2.zeros([tile_m, tile_n], asc2.float32)
        for kt in asc2.range(part * slice_tiles, asc2.minimum(tiles_k, (part + 1) * slice_tiles)):
            x = asc2.load(x_gm, [tile_m, tile_k], offsets=[row, kt * tile_k])
            y = asc2.load(y_gm, [tile_n, tile_k], offsets=[col, kt * tile_k])
            acc = asc2.matmul_acc(acc, x, y.T)
        # The epilogue belongs to one slice only: slice 0 adds 1, the others 0.
        acc = acc + (1 - asc2.minimum(part, 1))
        asc2.atomic_add(acc, z_gm, offsets=[row, col])


def matmul_mknk_2dgrid_splitk_add1(x, y, out=None, split_k=2, core_num=0):
    """x: [M, K], y: [N, K] (float32/float16/bfloat16, the same dtype, any strides); returns
    z = x @ y^T + 1 [M, N] float32 (written into ``out`` when given; it is zeroed first, then
    accumulated by split_k K slices per output tile)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [M, K] tensor, got {getattr(x, 'shape', type(x))}")
    m, k = x.shape
    if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[1] != k:
        raise ValueError(f"y: expected [N, {k}], got {getattr(y, 'shape', type(y))}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or y.dtype != x.dtype:
        raise TypeError(f"x, y: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {y.dtype}")
    if not isinstance(split_k, int) or not 1 <= split_k <= 4096:
        raise ValueError(f"split_k: expected an integer in 1..4096, got {split_k!r}")
    n = y.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    out.zero_()  # the slices accumulate into it
    if m > 0 and n > 0:
        matmul_mknk_2dgrid_splitk_add1_kernel[core_num](
            x, y, out, m, n, k, split_k, *x.stride(), *y.stride(), *out.stride(), TILE_M, TILE_N,
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
    return {"run": lambda: matmul_mknk_2dgrid_splitk_add1(x, y, out, split_k=4),
            "torch": lambda: xf @ yf.T + 1,
            "flops": 2.0 * m * n * k}


def reference(x, y):
    """float64 numpy x @ y^T + 1."""
    return x.double().numpy() @ y.double().numpy().T + 1.0


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.randn((37, 270)), torch.randn((45, 270))
    np.testing.assert_allclose(matmul_mknk_2dgrid_splitk_add1(x, y, split_k=3).numpy(),
                               reference(x, y), rtol=1e-4, atol=1e-4)
