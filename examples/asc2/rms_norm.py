"""RMSNorm along the last dim, in asc2's two forms with a host dispatcher: the full-row kernel
(a row fits in one tile; num_cols a ConstExpr) and the split-D kernel (rows streamed in 64-wide
tiles, host zero-padded; both dims runtime ints, a loop-carried float32 sum of squares).

Run: python3 rms_norm.py [-r Model|NPU] [-v PLATFORM] [--case full_row|split_d]
"""
import argparse

import numpy as np
import torch

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

CORE_NUM = 8
UB_BUDGET_BYTES = 64 * 1024
TILE_COLS = 64


@asc2.jit(always_compile=True)
def rms_norm_full_row_kernel(x_ptr, gamma_ptr, out_ptr, num_rows: int,
                             num_cols: asc.ConstExpr[int], epsilon: asc.ConstExpr[float]):
    x_gm = asc2.tensor(x_ptr, [num_rows, num_cols])
    gamma_gm = asc2.tensor(gamma_ptr, [1, num_cols])
    out_gm = asc2.tensor(out_ptr, [num_rows, num_cols])
    for row in asc2.range(asc2.block_idx(), num_rows, asc2.block_num(),
                          unroll_factor=2, parallel=True):
        x_row = asc2.load(x_gm, [1, num_cols], offsets=[row, 0])
        x32 = x_row.to(asc.float32)
        sum_sq = asc2.reduce_sum(x32 * x32)
        inv_rms = 1.0 / asc2.sqrt(sum_sq / num_cols + epsilon)
        gamma32 = asc2.load(gamma_gm, [1, num_cols], offsets=[0, 0]).to(asc.float32)
        asc2.store((x32 * gamma32 * inv_rms).to(x_row.dtype), out_gm, offsets=[row, 0])


@asc2.jit(always_compile=True)
def rms_norm_split_d_kernel(x_ptr, gamma_ptr, out_ptr, num_rows: int, num_cols: int,
                            padded_cols: int, num_tiles: int, tile_cols: asc.ConstExpr[int],
                            epsilon: asc.ConstExpr[float]):
    x_gm = asc2.tensor(x_ptr, [num_rows, padded_cols])
    gamma_gm = asc2.tensor(gamma_ptr, [1, padded_cols])
    out_gm = asc2.tensor(out_ptr, [num_rows, padded_cols])
    for row in asc2.range(asc2.block_idx(), num_rows, asc2.block_num(),
                          unroll_factor=2, parallel=True):
        sum_sq = asc2.reduce_sum(asc2.full([1, tile_cols], 0.0, dtype=asc.float32))
        for tile_id in asc2.range(num_tiles, unroll_factor=2):  # carries sum_sq: not parallel
            x = asc2.load(x_gm, [1, tile_cols], offsets=[row, tile_id * tile_cols])
            x32 = x.to(asc.float32)
            sum_sq = sum_sq + asc2.reduce_sum(x32 * x32)
        inv_rms = 1.0 / asc2.sqrt(sum_sq / num_cols + epsilon)  # the real width: pads are 0
        for tile_id in asc2.range(num_tiles, unroll_factor=2, parallel=True):
            col = tile_id * tile_cols
            x = asc2.load(x_gm, [1, tile_cols], offsets=[row, col])
            gamma = asc2.load(gamma_gm, [1, tile_cols], offsets=[0, col])
            out32 = x.to(asc.float32) * gamma.to(asc.float32) * inv_rms
            asc2.store(out32.to(x.dtype), out_gm, offsets=[row, col])


def _full_row_launch(x, gamma, eps):
    num_rows, num_cols = x.shape
    out = torch.zeros_like(x)
    rms_norm_full_row_kernel[CORE_NUM](x, gamma, out, num_rows, num_cols, eps)
    return out


def _split_d_launch(x, gamma, eps):
    num_rows, num_cols = x.shape
    padded_cols = asc.ceildiv(num_cols, TILE_COLS) * TILE_COLS
    x_padded = torch.zeros((num_rows, padded_cols), dtype=x.dtype)
    x_padded[:, :num_cols] = x
    gamma_padded = torch.zeros((padded_cols,), dtype=gamma.dtype)
    gamma_padded[:num_cols] = gamma
    out_padded = torch.zeros((num_rows, padded_cols), dtype=x.dtype)
    rms_norm_split_d_kernel[CORE_NUM](x_padded, gamma_padded, out_padded, num_rows, num_cols,
                                      padded_cols, padded_cols // TILE_COLS, TILE_COLS, eps)
    return out_padded[:, :num_cols].clone()


def rms_norm_launch(x, gamma, eps=1e-5):
    """Full-row when a row fits the unified buffer with aligned width, else split-D."""
    num_cols = x.shape[1]
    if num_cols * x.element_size() <= UB_BUDGET_BYTES and num_cols % 8 == 0:
        return _full_row_launch(x, gamma, eps)
    return _split_d_launch(x, gamma, eps)


def reference(x, gamma, eps):
    x64 = x.numpy().astype(np.float64)
    mean_sq = (x64 * x64).mean(axis=-1, keepdims=True)
    return x64 / np.sqrt(mean_sq + eps) * gamma.numpy().astype(np.float64)


def check(shape):
    torch.manual_seed(2026)
    x = torch.rand(shape, dtype=torch.float32) * 4 - 2
    gamma = torch.rand((shape[1],), dtype=torch.float32) + 0.5
    out = rms_norm_launch(x, gamma, 1e-5)
    np.testing.assert_allclose(out.numpy(), reference(x, gamma, 1e-5), atol=1e-4, rtol=1e-4)


CASES = {"full_row": (8, 256), "split_d": (8, 1055)}  # 1055 pads to 17 tiles of 64


def test_rms_norm_full_row():
    check(CASES["full_row"])


def test_rms_norm_split_d():
    check(CASES["split_d"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    for case in args.case or sorted(CASES):
        check(CASES[case])
        print(f"rms_norm {case}: PASS")


if __name__ == "__main__":
    main()
