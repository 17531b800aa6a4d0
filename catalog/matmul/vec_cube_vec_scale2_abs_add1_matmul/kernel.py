"""z = |(x * 2).half().float() @ y.float()^T| + 1 for x [M, K], y [N, K]: a prologue on each
loaded x tile (scale by 2, round to float16's grid), the matmul in float32 and an epilogue
(|.| + 1) on the finished tile, fused in one pass."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 256  # wide: each prologued x tile feeds 256 output columns (its cost / 4)
TILE_K = 64


@asc2.jit
def vec_cube_vec_scale2_abs_add1_matmul_kernel(x_ptr, y_ptr, z_ptr, m, n, k, xs0, xs1, ys0, ys1,
                                               zs0, zs1, tile_m: asc.ConstExpr[int],
                                               tile_n: asc.ConstExpr[int],
                                               tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [n, k], [ys0, ys1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    tiles_n = asc2.ceildiv(n, tile_n)
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m) * tiles_n, asc2.block_num()):
        row = t // tiles_n * tile_m
        col = t % tiles_n * tile_n
        acc = asc2.zeros([tile_m, tile_n], asc2.float32)
        for kt in asc2.range(asc2.ceildiv(k, tile_k)):
            x = asc2.load(x_gm, [tile_m, tile_k], offsets=[row, kt * tile_k]).to(asc2.float32)
            x = (x * 2).to(asc2.float16).to(asc2.float32)  # prologue; padding stays 0
            y = asc2.load(y_gm, [tile_n, tile_k], offsets=[col, kt * tile_k])
            acc = asc2.matmul_acc(acc, x, y.to(asc2.float32).T)
        asc2.store(asc2.abs(acc) + 1, z_gm, offsets=[row, col])  # epilogue on the whole sum


def vec_cube_vec_scale2_abs_add1_matmul(x, y, out=None, core_num=0):
    """x: [M, K], y: [N, K] (float32/float16/bfloat16, the same dtype, any strides); returns
    z = |(2x).half().float() @ y^T| + 1 [M, N] float32 (into ``out`` when given)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [M, K] tensor, got {getattr(x, 'shape', type(x))}")
    m, k = x.shape
    if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[1] != k:
        raise ValueError(f"y: expected [N, {k}], got {getattr(y, 'shape', type(y))}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or y.dtype != x.dtype:
        raise TypeError(f"x, y: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {y.dtype}")
    n = y.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    if m > 0 and n > 0:
        vec_cube_vec_scale2_abs_add1_matmul_kernel[core_num](
            x, y, out, m, n, k, *x.stride(), *y.stride(), *out.stride(), TILE_M, TILE_N, TILE_K)
    return out


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((m, k), generator=gen).to(getattr(torch, dtype))
    y = torch.randn((n, k), generator=gen).to(getattr(torch, dtype))
    out = torch.empty((m, n), dtype=torch.float32)
    xf, yf = x.float(), y.float()
    return {"run": lambda: vec_cube_vec_scale2_abs_add1_matmul(x, y, out),
            "torch": lambda: ((xf * 2).half().float() @ yf.T).abs() + 1,
            "flops": 2.0 * m * n * k}


def reference(x, y):
    """numpy: 2x (exact in float32) rounded to float16 by numpy, the matmul and |.| + 1 in
    float64."""
    pre = (x.float().numpy() * 2).astype(np.float16).astype(np.float64)
    return np.abs(pre @ y.double().numpy().T) + 1.0


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.randn((37, 70)), torch.randn((45, 70))
    np.testing.assert_allclose(vec_cube_vec_scale2_abs_add1_matmul(x, y).numpy(),
                               reference(x, y), rtol=1e-4, atol=1e-4)
