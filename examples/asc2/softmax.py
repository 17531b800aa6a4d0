"""Row softmax of a float32 matrix: each block loads a block of full rows and calls
asc2.softmax once (the norm dim is a ConstExpr; the row count is a runtime int).

Run: python3 softmax.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse

import numpy as np

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

CORE_NUM = 8


@asc2.jit(always_compile=True)
def softmax_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, num_rows: int,
                   num_cols: asc.ConstExpr[int], block_size: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [num_rows, num_cols])
    out_gm = asc2.tensor(out_ptr, [num_rows, num_cols])
    start_row = asc2.block_idx() * block_size
    rows = asc2.load(x_gm, [block_size, num_cols], offsets=[start_row, 0])
    asc2.store(asc2.softmax(rows), out_gm, offsets=[start_row, 0])


def softmax_launch(x):
    num_rows, num_cols = x.shape
    out = np.zeros_like(x)
    softmax_kernel[CORE_NUM](x, out, num_rows, num_cols, asc.ceildiv(num_rows, CORE_NUM))
    return out


def test_softmax_f32():
    rng = np.random.default_rng(seed=2026)
    x = rng.random((30, 96), dtype=np.float32) * 8 - 4  # 30 rows: the last block is partial
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(softmax_launch(x), e / e.sum(axis=1, keepdims=True),
                               atol=1e-5, rtol=1e-5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_softmax_f32()
    print("softmax: PASS")


if __name__ == "__main__":
    main()
