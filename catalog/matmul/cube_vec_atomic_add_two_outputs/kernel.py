"""Two outputs accumulated with float32 atomics from several blocks: for x [B, M, K], y [B, N, K]
and every batch b, z_b = x_b @ y_b^T; out_c += z_b and out_v += |z_b| + 1 into the caller's
[M, N] outputs. The batch index varies fastest over the blocks, so neighbouring blocks add into
the same output tile at the same time."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 64
TILE_K = 64


@asc2.jit
def cube_vec_atomic_add_two_outputs_kernel(x_ptr, y_ptr, c_ptr, v_ptr, b, m, n, k, xs0, xs1, xs2,
                                           ys0, ys1, ys2, cs0, cs1, vs0, vs1,
                                           tile_m: asc.ConstExpr[int],
                                           tile_n: asc.ConstExpr[int],
                                           tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [b, m, k], [xs0, xs1, xs2])
    y_gm = asc2.tensor(y_ptr, [b, n, k], [ys0, ys1, ys2])
    c_gm = asc2.tensor(c_ptr, [m, n], [cs0, cs1])
    v_gm = asc2.tensor(v_ptr, [m, n], [vs0, vs1])
    tiles_n = asc2.ceildiv(n, tile_n)
    for u in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m) * tiles_n * b,
                        asc2.block_num()):
        batch = u % b
        t = u // b
        row = t // tiles_n * tile_m
        col = t % tiles_n * tile_n
        acc = asc2.zeros([tile_m, tile_n], asc2.float32)
        for kt in asc2.range(asc2.ceildiv(k, tile_k)):
            x = asc2.load(x_gm, [1, tile_m, tile_k], offsets=[batch, row, kt * tile_k])
            y = asc2.load(y_gm, [1, tile_n, tile_k], offsets=[batch, col, kt * tile_k])
            acc = asc2.matmul_acc(acc, x.reshape(tile_m, tile_k), y.reshape(tile_n, tile_k).T)
        # Each batch's whole z_b: the matmul path adds z_b, the vector path |z_b| + 1.
        asc2.atomic_add(acc, c_gm, offsets=[row, col])
        asc2.atomic_add(asc2.abs(acc) + 1, v_gm, offsets=[row, col])


def cube_vec_atomic_add_two_outputs(x, y, out_c, out_v, core_num=0):
    """x: [B, M, K], y: [B, N, K] (float32/float16/bfloat16, the same dtype, any strides);
    out_c, out_v: float32 [M, N] accumulated in place (out_c += sum_b z_b,
    out_v += sum_b |z_b| + 1, z_b = x_b @ y_b^T). Returns (out_c, out_v)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise ValueError(f"x: expected a [B, M, K] tensor, got {getattr(x, 'shape', type(x))}")
    b, m, k = x.shape
    if (not isinstance(y, torch.Tensor) or y.dim() != 3 or y.shape[0] != b or y.shape[2] != k):
        raise ValueError(f"y: expected [{b}, N, {k}], got {getattr(y, 'shape', type(y))}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or y.dtype != x.dtype:
        raise TypeError(f"x, y: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {y.dtype}")
    n = y.shape[1]
    for name, out in (("out_c", out_c), ("out_v", out_v)):
        if (not isinstance(out, torch.Tensor) or list(out.shape) != [m, n]
                or out.dtype != torch.float32):
            raise ValueError(f"{name}: expected a float32 [{m}, {n}] tensor to accumulate into, "
                             f"got {getattr(out, 'dtype', type(out))} "
                             f"{list(getattr(out, 'shape', []))}")
    if b > 0 and m > 0 and n > 0:
        cube_vec_atomic_add_two_outputs_kernel[core_num](
            x, y, out_c, out_v, b, m, n, k, *x.stride(), *y.stride(), *out_c.stride(),
            *out_v.stride(), TILE_M, TILE_N, TILE_K)
    return out_c, out_v


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math."""
    b, m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((b, m, k), generator=gen).to(getattr(torch, dtype))
    y = torch.randn((b, n, k), generator=gen).to(getattr(torch, dtype))
    out_c, out_v = torch.zeros((m, n)), torch.zeros((m, n))
    xf, yf = x.float(), y.float()

    def torch_run():
        z = torch.bmm(xf, yf.transpose(1, 2))
        return z.sum(0), (z.abs() + 1).sum(0)
    return {"run": lambda: cube_vec_atomic_add_two_outputs(x, y, out_c, out_v),
            "torch": torch_run, "flops": 2.0 * b * m * n * k}


def reference(x, y, c0, v0):
    """float64 numpy (c0 + sum_b z_b, v0 + sum_b |z_b| + 1)."""
    z = x.double().numpy() @ y.double().numpy().transpose(0, 2, 1)
    return c0 + z.sum(0), v0 + (np.abs(z) + 1.0).sum(0)


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.randn((3, 37, 70)), torch.randn((3, 45, 70))
    c, v = torch.ones((37, 45)), torch.zeros((37, 45))
    want = reference(x, y, c.double().numpy(), v.double().numpy())
    for got, w in zip(cube_vec_atomic_add_two_outputs(x, y, c, v), want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-4, atol=1e-4)
