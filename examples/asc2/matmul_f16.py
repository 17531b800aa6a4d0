"""C = A @ B with float16 torch inputs and a float32 output: each block owns m_tiles_per_block
tiles of rows and n_tiles_per_block tiles of columns; operands are placed with TileLocation.

Run: python3 matmul_f16.py [-r Model|NPU] [-v PLATFORM]   (Model -> interp, NPU -> cpu)
"""
import argparse

import numpy as np
import torch

from tileops import asc
from tileops import asc2
import tileops.asc.runtime.config as config


@asc2.jit(always_compile=True)
def matmul_kernel(a_ptr, b_ptr, c_ptr,
                  a_shape: asc.ConstExpr, b_shape: asc.ConstExpr, c_shape: asc.ConstExpr,
                  m_tile: asc.ConstExpr[int], m_tiles_per_block: asc.ConstExpr[int],
                  n_tile: asc.ConstExpr[int], n_tiles_per_block: asc.ConstExpr[int]):
    a_gm = asc2.tensor(a_ptr, a_shape)
    b_gm = asc2.tensor(b_ptr, b_shape)
    c_gm = asc2.tensor(c_ptr, c_shape)
    block_id = asc2.block_idx()
    m_elems_per_block = m_tile * m_tiles_per_block
    m_base = (m_elems_per_block * block_id) % a_shape[0]
    n_base = ((m_elems_per_block * block_id) // a_shape[0]) * (n_tile * n_tiles_per_block)
    for j in range(n_tiles_per_block):  # ConstExpr bounds: unrolled while tracing
        b_offset = n_base + j * n_tile
        b_j = asc2.load(b_gm, [b_shape[0], n_tile], offsets=[0, b_offset],
                        location=asc2.TileLocation.L0B)
        for i in range(m_tiles_per_block):
            a_offset = m_base + i * m_tile
            a_i = asc2.load(a_gm, [m_tile, a_shape[1]], offsets=[a_offset, 0],
                            location=asc2.TileLocation.L0A)
            asc2.store(a_i @ b_j, c_gm, offsets=[a_offset, b_offset])


def matmul_launch(a, b, m_tile=16, n_tile=16):
    (m, _), (_, n) = a.shape, b.shape
    c = torch.zeros((m, n), dtype=torch.float32)
    # One block per m_tile rows; each computes all n // n_tile column tiles of its rows.
    core_num = m // m_tile
    matmul_kernel[core_num](a, b, c, a.shape, b.shape, c.shape,
                            m_tile, 1, n_tile, n // n_tile)
    return c


def test_matmul_f16():
    torch.manual_seed(2026)
    a = torch.rand((64, 48), dtype=torch.float32).to(torch.float16)
    b = torch.rand((48, 32), dtype=torch.float32).to(torch.float16)
    c = matmul_launch(a, b)
    expected = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
    np.testing.assert_allclose(c.numpy(), expected, atol=1e-2, rtol=1e-2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--backend", default="Model", choices=["Model", "NPU"])
    parser.add_argument("-v", "--platform", default="Ascend950PR_9599")
    args = parser.parse_args(argv)
    config.set_platform(args.backend, args.platform)
    test_matmul_f16()
    print("matmul_f16: PASS")


if __name__ == "__main__":
    main()
