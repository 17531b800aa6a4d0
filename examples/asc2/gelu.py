"""GELU in both of asc2's forms: the erf form on float16 and the tanh form on float32.

Run: python3 gelu.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse
import math

import numpy as np

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config

CORE_NUM = 16
TILE_SIZE = 64
GELU_K = math.sqrt(2.0 / math.pi)  # module level: no math calls inside a kernel
GELU_C = 0.044715


@asc2.jit(always_compile=True)
def gelu_erf_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, size: int,
                    tile_size: asc.ConstExpr[int], tile_per_block: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [size])
    out_gm = asc2.tensor(out_ptr, [size])
    base_offset = asc2.block_idx() * tile_size * tile_per_block
    for i in asc2.range(tile_per_block, unroll_factor=2, parallel=True):
        tile_offset = base_offset + i * tile_size
        x = asc2.load(x_gm, [tile_size], offsets=[tile_offset])
        k = asc2.sqrt(0.5)
        out = x * (asc2.erf(x * k) + 1) * 0.5
        asc2.store(out, out_gm, offsets=[tile_offset])


@asc2.jit(always_compile=True)
def gelu_tanh_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, size: int,
                     tile_size: asc.ConstExpr[int], tile_per_block: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [size])
    out_gm = asc2.tensor(out_ptr, [size])
    base_offset = asc2.block_idx() * tile_size * tile_per_block
    for i in asc2.range(tile_per_block, unroll_factor=2, parallel=True):
        tile_offset = base_offset + i * tile_size
        x = asc2.load(x_gm, [tile_size], offsets=[tile_offset])
        inner = (x + x * x * x * GELU_C) * GELU_K
        out = x * (asc2.tanh(inner) + 1) * 0.5
        asc2.store(out, out_gm, offsets=[tile_offset])


def gelu_launch(kernel, x):
    out = np.zeros_like(x)
    num_tiles = asc.ceildiv(x.size, TILE_SIZE)
    kernel[CORE_NUM](x, out, x.size, TILE_SIZE, asc.ceildiv(num_tiles, CORE_NUM))
    return out


def test_gelu_erf_f16():
    rng = np.random.default_rng(seed=2026)
    x = (rng.random(3001, dtype=np.float32) * 10 - 5).astype(np.float16)
    verf = np.vectorize(math.erf)
    x32 = x.astype(np.float32)
    expected = (0.5 * x32 * (1.0 + verf(x32 / np.sqrt(2.0)))).astype(np.float16)
    np.testing.assert_allclose(gelu_launch(gelu_erf_kernel, x).astype(np.float32),
                               expected.astype(np.float32), atol=5e-2, rtol=5e-2)


def test_gelu_tanh_f32():
    rng = np.random.default_rng(seed=2027)
    x = rng.random(3001, dtype=np.float32) * 10 - 5
    k = np.sqrt(2.0 / np.pi)
    expected = 0.5 * x * (1.0 + np.tanh(k * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(gelu_launch(gelu_tanh_kernel, x), expected, atol=1e-2, rtol=1e-2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_gelu_erf_f16()
    test_gelu_tanh_f32()
    print("gelu: PASS")


if __name__ == "__main__":
    main()
