"""|x| on float16, the asc2 elementwise pattern (1-D tiles, blocks over tiles).

Run: python3 abs_f16.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse

import numpy as np

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

TILE_SIZE = 128
CORE_NUM = 16


@asc2.jit(always_compile=True)
def abs_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, size: int,
               tile_size: asc.ConstExpr[int], tile_per_block: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [size])
    out_gm = asc2.tensor(out_ptr, [size])
    base_offset = asc2.block_idx() * tile_size * tile_per_block
    for i in asc2.range(tile_per_block, unroll_factor=2, parallel=True):
        tile_offset = base_offset + i * tile_size
        x = asc2.load(x_gm, [tile_size], offsets=[tile_offset])
        asc2.store(asc2.abs(x), out_gm, offsets=[tile_offset])


def abs_launch(x):
    out = np.zeros_like(x)
    size = x.size
    num_tiles = asc.ceildiv(size, TILE_SIZE)
    abs_kernel[CORE_NUM](x, out, size, TILE_SIZE, asc.ceildiv(num_tiles, CORE_NUM))
    return out


def test_abs_f16():
    rng = np.random.default_rng(seed=2026)
    x = (rng.random(4099, dtype=np.float32) * 10 - 5).astype(np.float16)  # a partial last tile
    np.testing.assert_allclose(abs_launch(x), np.abs(x), atol=1e-3, rtol=1e-3)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_abs_f16()
    print("abs_f16: PASS")


if __name__ == "__main__":
    main()
