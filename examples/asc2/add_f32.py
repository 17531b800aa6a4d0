"""x + y on float32, the asc2 elementwise pattern with two inputs.

Run: python3 add_f32.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse

import numpy as np

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

TILE_SIZE = 128
CORE_NUM = 16


@asc2.jit(always_compile=True)
def add_kernel(x_ptr: asc.GlobalAddress, y_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress,
               size: int, tile_size: asc.ConstExpr[int], tile_per_block: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [size])
    y_gm = asc2.tensor(y_ptr, [size])
    out_gm = asc2.tensor(out_ptr, [size])
    base_offset = asc2.block_idx() * tile_size * tile_per_block
    for i in asc2.range(tile_per_block, unroll_factor=2, parallel=True):
        tile_offset = base_offset + i * tile_size
        x = asc2.load(x_gm, [tile_size], offsets=[tile_offset])
        y = asc2.load(y_gm, [tile_size], offsets=[tile_offset])
        asc2.store(x + y, out_gm, offsets=[tile_offset])


def add_launch(x, y):
    out = np.zeros_like(x)
    num_tiles = asc.ceildiv(x.size, TILE_SIZE)
    add_kernel[CORE_NUM](x, y, out, x.size, TILE_SIZE, asc.ceildiv(num_tiles, CORE_NUM))
    return out


def test_add_f32():
    rng = np.random.default_rng(seed=2026)
    x = rng.random(5000, dtype=np.float32) * 10 - 5
    y = rng.random(5000, dtype=np.float32) * 10 - 5
    np.testing.assert_allclose(add_launch(x, y), x + y, atol=1e-5, rtol=1e-5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_add_f32()
    print("add_f32: PASS")


if __name__ == "__main__":
    main()
