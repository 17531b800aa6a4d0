"""Blockwise quantisation after x^T @ y (x [K, M], y [K, N]): per row and 128-column block,
scale = absmax(z) / 224 and codes = (z / scale).to(float8_e5m2) (to nearest, ties to even). The
output tile is one block wide, so each block's scale is a reduction of one float32 tile. An
all-zero block has scale 0 and codes 0 (+0.0)."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
BLOCK = 128  # part of the contract: one scale per row and 128 columns
TILE_K = 64
TARGET = 224.0  # |z| / scale <= 224, well inside e5m2's 57344


@asc2.jit
def matmul_kmkn_blockwise_quant128_kernel(x_ptr, y_ptr, q_ptr, s_ptr, m, n, k, blocks, xs0, xs1,
                                          ys0, ys1, qs0, qs1, ss0, ss1,
                                          tile_m: asc.ConstExpr[int],
                                          block: asc.ConstExpr[int],
                                          tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [k, m], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [k, n], [ys0, ys1])
    q_gm = asc2.tensor(q_ptr, [m, n], [qs0, qs1])  # float8_e5m2 elements
    s_gm = asc2.tensor(s_ptr, [m, blocks], [ss0, ss1])
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m) * blocks, asc2.block_num()):
        row = t // blocks * tile_m
        b = t % blocks
        acc = asc2.zeros([tile_m, block], asc2.float32)
        for kt in asc2.range(asc2.ceildiv(k, tile_k)):
            x = asc2.load(x_gm, [tile_k, tile_m], offsets=[kt * tile_k, row])
            y = asc2.load(y_gm, [tile_k, block], offsets=[kt * tile_k, b * block])
            acc = asc2.matmul_acc(acc, x.T, y)
        scale = asc2.abs(acc).max(1, keep_dims=True) / TARGET  # padding (0) never raises it
        # All-zero block: scale 0; dividing by 1 instead keeps the codes at +0.0.
        q = acc / asc2.where(scale > 0, scale, 1.0)
        asc2.store(q.to(asc2.float8_e5m2), q_gm, offsets=[row, b * block])
        asc2.store(scale, s_gm, offsets=[row, b])


def matmul_kmkn_blockwise_quant128(x, y, codes=None, scales=None, core_num=0):
    """x: [K, M], y: [K, N] (float32/float16/bfloat16, the same dtype, any strides); returns
    (codes [M, N] torch.uint8 holding float8_e5m2 codes, scales [M, ceil(N/128)] float32) with
    z ~= codes.decoded * scale of its block (written into ``codes``/``scales`` when given)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [K, M] tensor, got {getattr(x, 'shape', type(x))}")
    k, m = x.shape
    if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[0] != k:
        raise ValueError(f"y: expected [{k}, N], got {getattr(y, 'shape', type(y))}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or y.dtype != x.dtype:
        raise TypeError(f"x, y: expected float32, float16 or bfloat16, both alike, got "
                        f"{x.dtype} and {y.dtype}")
    n = y.shape[1]
    blocks = (n + BLOCK - 1) // BLOCK
    if codes is None:
        codes = torch.empty((m, n), dtype=torch.uint8)
    if list(codes.shape) != [m, n] or codes.dtype != torch.uint8:
        raise ValueError(f"codes: expected torch.uint8 [{m}, {n}], got {codes.dtype} "
                         f"{list(codes.shape)}")
    if scales is None:
        scales = torch.empty((m, blocks), dtype=torch.float32)
    if list(scales.shape) != [m, blocks] or scales.dtype != torch.float32:
        raise ValueError(f"scales: expected float32 [{m}, {blocks}], got {scales.dtype} "
                         f"{list(scales.shape)}")
    if m > 0 and n > 0:
        matmul_kmkn_blockwise_quant128_kernel[core_num](
            x, y, asc2.reinterpret(codes, asc2.float8_e5m2), scales, m, n, k, blocks,
            *x.stride(), *y.stride(), *codes.stride(), *scales.stride(), TILE_M, BLOCK, TILE_K)
    return codes, scales


def e5m2_decode(codes):
    """float64 values of float8_e5m2 codes: e5m2 is float16's top byte (1-5-2, bias 15)."""
    codes = np.asarray(codes, dtype=np.uint8)
    return (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float64)


def to_e5m2(v):
    """float64 rounding onto the e5m2 grid (2 mantissa bits, subnormal step 2^-16), to nearest,
    ties to even (numpy's round); |v| <= 224 here, far below the overflow."""
    v = np.asarray(v, dtype=np.float64)
    step = np.ldexp(1.0, np.maximum(np.frexp(np.abs(v))[1] - 1, -14) - 2)
    return np.round(v / step) * step


def reference(x, y):
    """float64 numpy (values, scales): values = z / scale before rounding (the test rounds and
    bounds them), scales [M, blocks]; all-zero blocks: scale 0, values 0."""
    z = x.double().numpy().T @ y.double().numpy()
    m, n = z.shape
    scales = np.zeros((m, (n + BLOCK - 1) // BLOCK))
    values = np.zeros_like(z)
    for b in range(scales.shape[1]):
        part = z[:, b * BLOCK:(b + 1) * BLOCK]
        scales[:, b] = np.abs(part).max(1) / TARGET
        s = scales[:, b:b + 1]
        values[:, b * BLOCK:(b + 1) * BLOCK] = np.divide(part, s, out=np.zeros_like(part),
                                                         where=s > 0)
    return values, scales


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the same math (torch 1.13 has
    no fp8: float16 stands in for the final cast)."""
    m, n, k = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((k, m), generator=gen).to(getattr(torch, dtype))
    y = torch.randn((k, n), generator=gen).to(getattr(torch, dtype))
    codes = torch.empty((m, n), dtype=torch.uint8)
    scales = torch.empty((m, (n + BLOCK - 1) // BLOCK), dtype=torch.float32)
    xf, yf = x.float(), y.float()

    def torch_run():
        z = (xf.T @ yf).reshape(m, -1, BLOCK)
        s = z.abs().amax(-1, keepdim=True) / TARGET
        return (z / s).half(), s
    return {"run": lambda: matmul_kmkn_blockwise_quant128(x, y, codes, scales),
            "torch": torch_run, "flops": 2.0 * m * n * k}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x, y = torch.randn((70, 37)), torch.randn((70, 300))
    c, s = matmul_kmkn_blockwise_quant128(x, y)
    v, sw = reference(x, y)
    np.testing.assert_allclose(s.numpy(), sw, rtol=1e-5)
    assert (np.abs(e5m2_decode(c.numpy()) - v) <= 0.13 * np.abs(v) + 1e-4).all()
