"""z = x.float() @ y.float()^T for float8 x [M, K], y [N, K] (float8_e5m2 or float8_e4m3fn codes
in torch.uint8 storage), float32 output: the loads read the 8-bit codes, the widening to float32
after the load is exact, and the matmul accumulates in float32."""

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 256  # wide: each decoded x tile feeds 256 output columns (its decoding / 4)
TILE_K = 64
FORMATS = {"e5m2": asc2.float8_e5m2, "e4m3fn": asc2.float8_e4m3fn}


@asc2.jit
def matmul_e5m2_shortcut_kernel(x_ptr, y_ptr, z_ptr, m, n, k, xs0, xs1, ys0, ys1, zs0, zs1,
                                tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int],
                                tile_k: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])  # float8 elements (the launch's reinterpret)
    y_gm = asc2.tensor(y_ptr, [n, k], [ys0, ys1])
    z_gm = asc2.tensor(z_ptr, [m, n], [zs0, zs1])
    tiles_n = asc2.ceildiv(n, tile_n)
    for t in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m) * tiles_n, asc2.block_num()):
        row = t // tiles_n * tile_m
        col = t % tiles_n * tile_n
        acc = asc2.zeros([tile_m, tile_n], asc2.float32)
        for kt in asc2.range(asc2.ceildiv(k, tile_k)):
            # Code 0 pads the tails (+0.0 in both formats); every float8 value is a float32.
            x = asc2.load(x_gm, [tile_m, tile_k], offsets=[row, kt * tile_k]).to(asc2.float32)
            y = asc2.load(y_gm, [tile_n, tile_k], offsets=[col, kt * tile_k]).to(asc2.float32)
            acc = asc2.matmul_acc(acc, x, y.T)
        asc2.store(acc, z_gm, offsets=[row, col])


def matmul_e5m2_shortcut(x, y, fmt="e5m2", out=None, core_num=0):
    """x: [M, K], y: [N, K], torch.uint8 tensors of float8 codes (fmt "e5m2" or "e4m3fn"; torch
    1.13 has no fp8 dtype; any strides); returns z [M, N] float32 (into ``out`` when given)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt: expected one of {sorted(FORMATS)}, got {fmt!r}")
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2:
            raise ValueError(f"{name}: expected a 2-D tensor, got {getattr(t, 'shape', type(t))}")
        if t.dtype != torch.uint8:
            raise TypeError(f"{name}: expected torch.uint8 storage of float8_{fmt} codes, got "
                            f"{t.dtype}")
    m, k = x.shape
    if y.shape[1] != k:
        raise ValueError(f"y: expected [N, {k}], got {list(y.shape)}")
    n = y.shape[0]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    if m > 0 and n > 0:
        f8 = FORMATS[fmt]
        matmul_e5m2_shortcut_kernel[core_num](
            asc2.reinterpret(x, f8), asc2.reinterpret(y, f8), out, m, n, k, *x.stride(),
            *y.stride(), *out.stride(), TILE_M, TILE_N, TILE_K)
    return out


def decode_table(fmt):
    """float64 values of the 256 codes of a float8 format (NaN codes: NaN), from the fields:
    e5m2 is 1-5-2 with bias 15 and infinities, e4m3fn 1-4-3 with bias 7, no infinities and NaN
    at 0x7F/0xFF."""
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    ebits, mbits, bias = (5, 2, 15) if fmt == "e5m2" else (4, 3, 7)
    e = (codes >> mbits) & ((1 << ebits) - 1)
    frac = (codes & ((1 << mbits) - 1)) / float(1 << mbits)
    mag = np.where(e == 0, np.ldexp(frac, 1 - bias), np.ldexp(1.0 + frac, e - bias))
    if fmt == "e5m2":
        top = e == (1 << ebits) - 1
        mag = np.where(top, np.where(frac == 0, np.inf, np.nan), mag)
    else:
        mag = np.where((codes & 0x7F) == 0x7F, np.nan, mag)
    return sign * mag


def nearest_codes(values, fmt):
    """The codes of the finite float8 values nearest to float64 ``values`` (inputs for tests)."""
    table = decode_table(fmt)
    finite = np.flatnonzero(np.isfinite(table))
    order = finite[np.argsort(table[finite], kind="stable")]
    grid = table[order]
    v = np.clip(np.asarray(values, np.float64), grid[0], grid[-1])
    i = np.clip(np.searchsorted(grid, v), 1, len(grid) - 1)
    below = np.abs(v - grid[i - 1]) <= np.abs(grid[i] - v)
    return order[np.where(below, i - 1, i)].astype(np.uint8)


def reference(x, y, fmt="e5m2"):
    """float64 numpy x @ y^T of the decoded codes."""
    table = decode_table(fmt)
    return table[x.numpy()] @ table[y.numpy()].T


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the decoded values."""
    m, n, k = shape
    fmt = dtype.removeprefix("float8_")
    gen = np.random.default_rng(0)
    x = torch.from_numpy(nearest_codes(gen.standard_normal((m, k)), fmt))
    y = torch.from_numpy(nearest_codes(gen.standard_normal((n, k)), fmt))
    out = torch.empty((m, n), dtype=torch.float32)
    table = torch.from_numpy(decode_table(fmt)).float()
    xf, yf = table[x.long()], table[y.long()]
    return {"run": lambda: matmul_e5m2_shortcut(x, y, fmt, out),
            "torch": lambda: xf @ yf.T,
            "flops": 2.0 * m * n * k}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    rng = np.random.default_rng(0)
    for f in FORMATS:
        a = torch.from_numpy(nearest_codes(rng.standard_normal((37, 70)), f))
        b = torch.from_numpy(nearest_codes(rng.standard_normal((45, 70)), f))
        np.testing.assert_allclose(matmul_e5m2_shortcut(a, b, f).numpy(), reference(a, b, f),
                                   rtol=1e-5, atol=1e-5)
