"""Per-row ascending sort of a [R, C] float32 matrix: the values and their int32 column
positions, as torch.sort(x, -1) (ties in either order there; here stable: equal values keep
their column order). Any C: the row is one tile of C lanes."""

import numpy as np
import torch

from tileops import asc, asc2

ROWS = 2  # rows per tile: a few rows amortise the loop; the sort runs per row either way


@asc2.jit
def sort_rows_kernel(x_ptr, v_ptr, i_ptr, r, xs0, xs1, vs0, vs1, is0, is1,
                     c: asc.ConstExpr[int], rows: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [r, c], [xs0, xs1])
    v_gm = asc2.tensor(v_ptr, [r, c], [vs0, vs1])
    i_gm = asc2.tensor(i_ptr, [r, c], [is0, is1])
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(r, rows), asc2.block_num()):
        # Rows past r read 0 and are not stored.
        x = asc2.load(x_gm, [rows, c], offsets=[t * rows, 0])
        asc2.store(asc2.sort(x, -1), v_gm, offsets=[t * rows, 0])
        asc2.store(asc2.argsort(x, -1), i_gm, offsets=[t * rows, 0])


def sort_rows(x, values=None, indices=None, core_num=0):
    """x: [R, C] float32 (any strides). Returns (values float32 [R, C], indices int32 [R, C]):
    each row ascending, NaN last, equal values in column order."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [R, C] tensor, got {getattr(x, 'shape', type(x))}")
    if x.dtype != torch.float32:
        raise TypeError(f"x: expected float32, got {x.dtype}")
    r, c = x.shape
    if c < 1 or c > 2**31 - 1:
        raise ValueError(f"x: expected 1 <= C < 2^31 columns, got {c}")
    values = torch.empty((r, c), dtype=torch.float32) if values is None else values
    indices = torch.empty((r, c), dtype=torch.int32) if indices is None else indices
    for name, t, dtype in (("values", values, torch.float32), ("indices", indices, torch.int32)):
        if list(t.shape) != [r, c] or t.dtype != dtype:
            raise ValueError(f"{name}: expected {dtype} [{r}, {c}], got {t.dtype} "
                             f"{list(t.shape)}")
    if r > 0:
        sort_rows_kernel[core_num](x, values, indices, r, *x.stride(), *values.stride(),
                                   *indices.stride(), c, ROWS)
    return values, indices


def reference(x):
    """float64 numpy (values, indices): a stable argsort per row (numpy puts NaN last too)."""
    xd = x.double().numpy()
    idx = np.argsort(xd, axis=-1, kind="stable")
    return np.take_along_axis(xd, idx, -1), idx


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch.sort (values and indices)."""
    r, c = shape
    x = torch.randn((r, c), generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    values, indices = torch.empty_like(x), torch.empty((r, c), dtype=torch.int32)
    return {"run": lambda: sort_rows(x, values, indices), "torch": lambda: torch.sort(x, -1),
            "flops": float(r * c)}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x = torch.randn((5, 37))
    x[0, :3] = torch.tensor([1.0, float("nan"), 1.0])
    v, i = sort_rows(x)
    want_v, want_i = reference(x)
    np.testing.assert_array_equal(v.numpy(), want_v)
    np.testing.assert_array_equal(i.numpy(), want_i)
