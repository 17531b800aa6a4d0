"""HiF8 value emulation in float32: every element of x [R, C] rounded onto the HiF8 grid
(CATALOG.md's to_hif8), the result kept as float32. Two overflow variants: saturating
(|x| >= 40960 -> +-FLT_MAX) and Inf (-> +-inf). NaN and +-inf pass through."""

import numpy as np
import torch

from tileops import asc, asc2

TILE = (8, 128)  # [rows, columns] per tile; tails read 0 and are not stored
FLT_MAX = 3.4028234663852886e38


@asc2.jit
def to_hif8_kernel(x_ptr, y_ptr, r, c, xs0, xs1, ys0, ys1, saturate: asc.ConstExpr[bool],
                   tile_r: asc.ConstExpr[int], tile_c: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [r, c], [xs0, xs1])
    y_gm = asc2.tensor(y_ptr, [r, c], [ys0, ys1])
    tiles_c = asc2.ceildiv(c, tile_c)
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(r, tile_r) * tiles_c, asc2.block_num()):
        row = t // tiles_c * tile_r
        col = t % tiles_c * tile_c
        x = asc2.load(x_gm, [tile_r, tile_c], offsets=[row, col])
        mag = asc2.abs(x)
        # E = floor(log2|x|) from the exponent field (subnormals give -127: below -23, so 0).
        e = ((x.bitcast(asc2.int32) >> 23) & 0xFF) - 127
        ae = asc2.abs(e)
        # f = 3, 2, 1, 0 mantissa bits for |E| <= 3, <= 7, <= 15, beyond: thresholds passed.
        f = (ae <= 3).to(asc2.int32) + (ae <= 7).to(asc2.int32) + (ae <= 15).to(asc2.int32)
        # The step s = 2^(max(E, -22) - f), built from its exponent bits (>= 2^-25: normal).
        step = ((asc2.maximum(e, -22) - f + 127) << 23).bitcast(asc2.float32)
        # |x| / s < 32 and is exact, so + 0.5 and floor round half away from zero exactly.
        q = asc2.floor(mag / step + 0.5) * step
        q = asc2.where(e < -23, 0.0, q)
        q = asc2.where(mag >= 40960.0, FLT_MAX if saturate else float("inf"), q)
        q = asc2.where(x < 0, -q, q)
        y = asc2.where(asc2.logical_or(asc2.isnan(x), asc2.isinf(x)), x, q)
        asc2.store(y, y_gm, offsets=[row, col])


def to_hif8(x, saturate=True, out=None, core_num=0):
    """x: [R, C] float32 (any strides). Returns float32 values on the HiF8 grid; overflow goes
    to +-FLT_MAX (saturate=True) or +-inf."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"x: expected a [R, C] tensor, got {getattr(x, 'shape', type(x))}")
    if x.dtype != torch.float32:
        raise TypeError(f"x: expected float32, got {x.dtype}")
    if not isinstance(saturate, bool):
        raise TypeError(f"saturate: expected a bool, got {type(saturate).__name__}")
    r, c = x.shape
    out = torch.empty((r, c), dtype=torch.float32) if out is None else out
    if list(out.shape) != [r, c] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{r}, {c}], got {out.dtype} {list(out.shape)}")
    if r > 0 and c > 0:
        to_hif8_kernel[core_num](x, out, r, c, *x.stride(), *out.stride(), saturate, *TILE)
    return out


def reference(x, saturate=True):
    """CATALOG.md's HiF8 rounding in float64 numpy, written from its definition: E from
    frexp (exact for every magnitude, subnormals included); |x| >= 40960 -> +-FLT_MAX or
    +-inf; E < -23 -> 0; else sign(x)·floor(|x|/s + 0.5)·s, s = max(2^E, 2^-22)·2^-f with
    f = 3, 2, 1, 0 for |E| <= 3, <= 7, <= 15, >= 16. NaN and +-inf pass through."""
    xd = np.asarray(x.double().numpy() if isinstance(x, torch.Tensor) else x, np.float64)
    mag = np.abs(xd)
    finite = np.isfinite(xd) & (mag > 0)
    e = np.frexp(np.where(finite, mag, 1.0))[1] - 1
    f = np.select([np.abs(e) <= 3, np.abs(e) <= 7, np.abs(e) <= 15], [3, 2, 1], 0)
    step = np.ldexp(1.0, np.maximum(e, -22) - f)
    q = np.floor(mag / step + 0.5) * step
    q = np.where(e < -23, 0.0, q)
    q = np.where(mag >= 40960.0, FLT_MAX if saturate else np.inf, q)
    return np.where(finite, np.copysign(q, xd), xd)


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch doing the same (float32)."""
    r, c = shape
    x = torch.randn((r, c), generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    out = torch.empty_like(x)

    def manual():
        mag = x.abs()
        e = torch.floor(torch.log2(mag.clamp_min(1e-38)))
        f = torch.where(e.abs() <= 3, 3.0, torch.where(e.abs() <= 7, 2.0,
                                                        torch.where(e.abs() <= 15, 1.0, 0.0)))
        step = torch.exp2(torch.clamp_min(e, -22) - f)
        q = torch.where(e < -23, 0.0, torch.floor(mag / step + 0.5) * step)
        return torch.where(mag >= 40960, FLT_MAX, q).copysign(x)

    return {"run": lambda: to_hif8(x, True, out), "torch": manual, "flops": float(r * c)}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    x = torch.tensor([[1.07, 18.0, 320.0, 40959.0, -5e4, float("nan")]])
    np.testing.assert_array_equal(to_hif8(x).numpy(), reference(x))
    assert to_hif8(x).tolist()[0][:4] == [1.125, 20.0, 384.0, 32768.0]
