"""z = (x @ y^T) / rowsum(x @ y^T) for x [M, K], y [N, K] with N <= 256: one output tile holds
whole rows, so the row sum is a reduction of the finished float32 tile (one pass)."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 32
TILE_N = 256  # the widest row this one-pass kernel takes
TILE_K = 64


@asc2.jit
def matmul_rowwise_norm_kernel(x_ptr, y_ptr, z_ptr, m, n, k, xs0, xs1, ys0, ys1, zs0, zs1,
                               tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int],
                               tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [n, k], [ys0, ys1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    for i in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m), asc2.block_num()):
        acc = asc2.zeros([tile_m, tile_n], asc2.float32)
        for kt in asc2.range(asc2.ceildiv(k, tile_k)):
            x = asc2.load(x_gm, [tile_m, tile_k], offsets=[i * tile_m, kt * tile_k])
            y = asc2.load(y_gm, [tile_n, tile_k], offsets=[0, kt * tile_k])
            acc = asc2.matmul_acc(acc, x, y.T)
        # Columns past n are 0 (zero-padded y rows), so they add nothing to the row sum.
        total = acc.sum(1, keep_dims=True)
        asc2.store(acc / total, z_gm, offsets=[i * tile_m, 0])


def matmul_rowwise_norm(x, y, out=None, core_num=0):
    """x: [M, K], y: [N, K] with N <= 256 (float32/float16/bfloat16, the same dtype, any
    strides); returns z = (x @ y^T) / rowsum [M, N] float32 (into ``out`` when given). A row
    whose sum is 0 gives inf/NaN, as the division does."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [M, K] tensor, got {getattr(x, 'shape', type(x))}")
    m, k = x.shape
    if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[1] != k:
        raise ValueError(f"y: expected [N, {k}], got {getattr(y, 'shape', type(y))}")
    if not 1 <= y.shape[0] <= TILE_N:
        raise ValueError(f"y: expected N in 1..{TILE_N} rows (one tile per row; wider rows need "
                         f"a two-pass kernel such as matmul_rowwise_l2_norm), got {y.shape[0]}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or y.dtype != x.dtype:
        raise TypeError(f"x, y: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {y.dtype}")
    n = y.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    if m > 0:
        matmul_rowwise_norm_kernel[core_num](x, y, out, m, n, k, *x.stride(), *y.stride(),
                                             *out.stride(), TILE_M, TILE_N, TILE_K)
    return out


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.rand((m, k), generator=gen).to(getattr(torch, dtype))
    y = torch.rand((n, k), generator=gen).to(getattr(torch, dtype))
    out = torch.empty((m, n), dtype=torch.float32)
    xf, yf = x.float(), y.float()

    def torch_run():
        z = xf @ yf.T
        return z / z.sum(1, keepdim=True)
    return {"run": lambda: matmul_rowwise_norm(x, y, out), "torch": torch_run,
            "flops": 2.0 * m * n * k}


def reference(x, y):
    """float64 numpy z / rowsum(z)."""
    z = x.double().numpy() @ y.double().numpy().T
    return z / z.sum(1, keepdims=True)


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.rand((37, 70)), torch.rand((45, 70))
    np.testing.assert_allclose(matmul_rowwise_norm(x, y).numpy(), reference(x, y), rtol=1e-4,
                               atol=1e-4)
