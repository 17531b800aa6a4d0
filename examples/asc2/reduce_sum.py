"""Row sums of a float32 matrix: rows distributed over blocks, each sum stored as a padded tile.

Run: python3 reduce_sum.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse

import numpy as np

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

CORE_NUM = 16
OUT_PAD = 8  # 32 bytes of float32: asc2 stores whole tiles, never lone scalars


@asc2.jit(always_compile=True)
def reduce_sum_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, num_rows: int,
                      num_cols: asc.ConstExpr[int], out_pad: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [num_rows, num_cols])
    out_gm = asc2.tensor(out_ptr, [num_rows, out_pad])
    for i in asc2.range(asc2.block_idx(), num_rows, asc2.block_num(),
                        unroll_factor=2, parallel=True):
        row = asc2.load(x_gm, [1, num_cols], offsets=[i, 0])
        s = asc2.reduce_sum(row)
        asc2.store(asc2.full([1, out_pad], s, dtype=row.dtype), out_gm, offsets=[i, 0])


def reduce_sum_launch(x):
    num_rows, num_cols = x.shape
    out = np.zeros((num_rows, OUT_PAD), dtype=x.dtype)
    reduce_sum_kernel[CORE_NUM](x, out, num_rows, num_cols, OUT_PAD)
    return out[:, 0]


def test_reduce_sum_f32():
    rng = np.random.default_rng(seed=2026)
    x = rng.random((37, 200), dtype=np.float32) * 2 - 1
    np.testing.assert_allclose(reduce_sum_launch(x), x.sum(axis=1, dtype=np.float64),
                               atol=1e-4, rtol=1e-4)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_reduce_sum_f32()
    print("reduce_sum: PASS")


if __name__ == "__main__":
    main()
