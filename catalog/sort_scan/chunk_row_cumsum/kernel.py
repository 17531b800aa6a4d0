"""Row cumulative sum of x [M, H] that restarts every `chunk` rows:
y[c·chunk + i, :] = Σ_{r ≤ i} x[c·chunk + r, :]. Any H (below 64 or not a multiple of 64) and
any M (the last chunk may be short)."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_H = 64  # columns per tile; narrower rows take one tile of their own width


@asc2.jit
def chunk_row_cumsum_kernel(x_ptr, y_ptr, m, h, xs0, xs1, ys0, ys1,
                            chunk: asc.ConstExpr[int], tile_h: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, h], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [m, h], [ys0, ys1])
    tiles_h = asc2.ceildiv(h, tile_h)
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(m, chunk) * tiles_h, asc2.block_num()):
        row = t // tiles_h * chunk
        col = t % tiles_h * tile_h
        # A short last chunk or column tile reads 0 past the edge; the store writes only inside.
        x = asc2.load(x_gm, [chunk, tile_h], offsets=[row, col])
        asc2.store(asc2.cumsum(x, 0), y_gm, offsets=[row, col])


def chunk_row_cumsum(x, chunk, out=None, core_num=0):
    """x: [M, H] float32 or float16 (any strides); chunk >= 1 rows. Returns y like x."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [M, H] tensor, got {getattr(x, 'shape', type(x))}")
    if x.dtype not in (torch.float32, torch.float16):
        raise TypeError(f"x: expected float32 or float16, got {x.dtype}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk: expected an int >= 1, got {chunk!r}")
    m, h = x.shape
    out = torch.empty((m, h), dtype=x.dtype) if out is None else out
    if list(out.shape) != [m, h] or out.dtype != x.dtype:
        raise ValueError(f"out: expected {x.dtype} [{m}, {h}], got {out.dtype} {list(out.shape)}")
    if m > 0 and h > 0:
        chunk_row_cumsum_kernel[core_num](x, out, m, h, *x.stride(), *out.stride(),
                                          min(chunk, m), min(TILE_H, h))
    return out


def reference(x, chunk):
    """float64 numpy: a cumsum within each block of `chunk` rows."""
    xd = x.double().numpy()
    y = np.empty_like(xd)
    for r in range(0, xd.shape[0], chunk):
        y[r:r + chunk] = np.cumsum(xd[r:r + chunk], axis=0)
    return y


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch doing the same."""
    m, h, chunk = shape
    x = torch.randn((m, h), generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    out = torch.empty_like(x)

    def manual():
        pad = (-m) % chunk
        xp = torch.nn.functional.pad(x.float(), (0, 0, 0, pad))
        return xp.view(-1, chunk, h).cumsum(1).view(-1, h)[:m]

    return {"run": lambda: chunk_row_cumsum(x, chunk, out), "torch": manual,
            "flops": float(m * h)}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x = torch.randn((70, 24))
    np.testing.assert_allclose(chunk_row_cumsum(x, 16).numpy(), reference(x, 16), rtol=1e-5,
                               atol=1e-5)
