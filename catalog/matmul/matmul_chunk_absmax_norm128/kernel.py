"""out = z / absmax per row of each 128-column chunk, z = x @ y^T (x [M, K], y [N, K]): the output
tile is one chunk wide, so each chunk's statistic is a reduction of one float32 tile. A chunk
row whose absmax is 0 (all zero) gives 0."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
CHUNK = 128  # part of the contract: the output tile is one chunk wide
TILE_K = 64


@asc2.jit
def matmul_chunk_absmax_norm128_kernel(x_ptr, y_ptr, z_ptr, m, n, k, xs0, xs1, ys0, ys1, zs0,
                                       zs1, tile_m: asc.ConstExpr[int],
                                       chunk: asc.ConstExpr[int], tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [n, k], [ys0, ys1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    chunks = asc2.ceildiv(n, chunk)
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m) * chunks, asc2.block_num()):
        row = t // chunks * tile_m
        col = t % chunks * chunk
        acc = asc2.zeros([tile_m, chunk], asc2.float32)
        for kt in asc2.range(asc2.ceildiv(k, tile_k)):
            x = asc2.load(x_gm, [tile_m, tile_k], offsets=[row, kt * tile_k])
            y = asc2.load(y_gm, [chunk, tile_k], offsets=[col, kt * tile_k])
            acc = asc2.matmul_acc(acc, x, y.T)
        # |padding| is 0, never above a real absmax; abs -> max -> divide.
        peak = asc2.abs(acc).max(1, keep_dims=True)
        inv = asc2.where(peak > 0, 1.0 / peak, 0.0)
        asc2.store(acc * inv, z_gm, offsets=[row, col])


def matmul_chunk_absmax_norm128(x, y, out=None, core_num=0):
    """x: [M, K], y: [N, K] (float32/float16/bfloat16, the same dtype, any strides); returns
    z / absmax(z) per row and 128-column chunk, [M, N] float32 (into ``out`` when given); the
    last chunk is N mod 128 wide; an all-zero chunk row gives 0."""
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
        matmul_chunk_absmax_norm128_kernel[core_num](x, y, out, m, n, k, *x.stride(),
                                                     *y.stride(), *out.stride(), TILE_M, CHUNK,
                                                     TILE_K)
    return out


def _chunked_absmax(z):
    """float64 [M, N] -> per-element absmax of its row's 128-column chunk."""
    peak = np.zeros_like(z)
    for c in range(0, z.shape[1], CHUNK):
        peak[:, c:c + CHUNK] = np.abs(z[:, c:c + CHUNK]).max(1, keepdims=True)
    return peak


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((m, k), generator=gen).to(getattr(torch, dtype))
    y = torch.randn((n, k), generator=gen).to(getattr(torch, dtype))
    out = torch.empty((m, n), dtype=torch.float32)
    xf, yf = x.float(), y.float()

    def torch_run():
        z = (xf @ yf.T).reshape(m, -1, CHUNK)
        return (z / z.abs().amax(-1, keepdim=True)).reshape(m, n)
    return {"run": lambda: matmul_chunk_absmax_norm128(x, y, out), "torch": torch_run,
            "flops": 2.0 * m * n * k}


def reference(x, y):
    """float64 numpy z / absmax per row and 128-column chunk (all-zero chunk rows: 0)."""
    z = x.double().numpy() @ y.double().numpy().T
    peak = _chunked_absmax(z)
    return np.divide(z, peak, out=np.zeros_like(z), where=peak > 0)


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.randn((37, 70)), torch.randn((300, 70))
    np.testing.assert_allclose(matmul_chunk_absmax_norm128(x, y).numpy(), reference(x, y),
                               rtol=1e-4, atol=1e-4)
