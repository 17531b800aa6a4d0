"""Leaky ReLU on float32: asc2.where on a comparison tile.

Run: python3 leaky_relu.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse

import numpy as np

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

TILE_SIZE = 128
CORE_NUM = 16
ALPHA = 0.01


@asc2.jit(always_compile=True)
def leaky_relu_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, size: int,
                      alpha: asc.ConstExpr[float], tile_size: asc.ConstExpr[int],
                      tile_per_block: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [size])
    out_gm = asc2.tensor(out_ptr, [size])
    base_offset = asc2.block_idx() * tile_size * tile_per_block
    for i in asc2.range(tile_per_block, unroll_factor=2, parallel=True):
        tile_offset = base_offset + i * tile_size
        x = asc2.load(x_gm, [tile_size], offsets=[tile_offset])
        out = asc2.where(x >= 0, x, x * alpha)
        asc2.store(out, out_gm, offsets=[tile_offset])


def leaky_relu_launch(x, alpha=ALPHA):
    out = np.zeros_like(x)
    num_tiles = asc.ceildiv(x.size, TILE_SIZE)
    leaky_relu_kernel[CORE_NUM](x, out, x.size, alpha, TILE_SIZE,
                                asc.ceildiv(num_tiles, CORE_NUM))
    return out


def test_leaky_relu_f32():
    rng = np.random.default_rng(seed=2026)
    x = rng.random(2050, dtype=np.float32) * 10 - 5
    expected = np.where(x >= 0, x, x * np.float32(ALPHA))
    np.testing.assert_allclose(leaky_relu_launch(x), expected, atol=1e-5, rtol=1e-5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_leaky_relu_f32()
    print("leaky_relu: PASS")


if __name__ == "__main__":
    main()
