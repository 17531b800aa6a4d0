"""y = exp(x) + 2 on rows of an unaligned width (the contract's 100 columns; any width works):
no tile, offset or stride is assumed to be a multiple of anything."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_R = 8  # rows per tile; the last tile may be short


@asc2.jit
def exp_plus2_unaligned_kernel(x_ptr, y_ptr, r, xs0, xs1, ys0, ys1, c: asc.ConstExpr[int],
                               tile_r: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [r, c], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [r, c], [ys0, ys1])
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(r, tile_r), asc2.block_num()):
        # The tile is exactly c wide: nothing past the row is read or written (no padding).
        x = asc2.load(x_gm, [tile_r, c], offsets=[t * tile_r, 0])
        y = asc2.exp(x.to(asc2.float32)) + 2.0
        asc2.store(y.to(x.dtype), y_gm, offsets=[t * tile_r, 0])


def exp_plus2_unaligned(x, out=None, core_num=0):
    """x: [R, C] float32 or float16 (any strides, C any width). Returns exp(x) + 2 like x,
    computed in float32."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [R, C] tensor, got {getattr(x, 'shape', type(x))}")
    if x.dtype not in (torch.float32, torch.float16):
        raise TypeError(f"x: expected float32 or float16, got {x.dtype}")
    r, c = x.shape
    out = torch.empty((r, c), dtype=x.dtype) if out is None else out
    if list(out.shape) != [r, c] or out.dtype != x.dtype:
        raise ValueError(f"out: expected {x.dtype} [{r}, {c}], got {out.dtype} {list(out.shape)}")
    if r > 0 and c > 0:
        exp_plus2_unaligned_kernel[core_num](x, out, r, *x.stride(), *out.stride(), c, TILE_R)
    return out


def reference(x):
    return np.exp(x.double().numpy()) + 2.0


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch doing the same."""
    r, c = shape
    x = torch.randn((r, c), generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    out = torch.empty_like(x)
    return {"run": lambda: exp_plus2_unaligned(x, out),
            "torch": lambda: (torch.exp(x.float()) + 2).to(x.dtype), "flops": float(r * c)}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x = torch.randn((13, 100))
    np.testing.assert_allclose(exp_plus2_unaligned(x).numpy(), reference(x), rtol=1e-6)
