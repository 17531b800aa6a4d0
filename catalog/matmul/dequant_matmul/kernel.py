"""out = x.float() @ dequantize(W)^T for x [M, K] (float32/bfloat16) and a weight W [N, K] in the
layout of tileops.ops.quantize_weight (version 2): int8 per channel or per group, int4 per group
of 32/64/128, symmetric or with zero points. The kernel reads the packed buffer through strided
views (codes, scales, zero points), unpacks and scales the codes of one group in registers and
accumulates in float32; no dequantised copy of W is ever written."""

import numpy as np
import torch

from tileops import asc, asc2

HEADER = 64
MAGIC = 0x57514F54  # "TOQW"
TILE_M = 32
ROW_TILES = 8  # layout tiles of 4 weight rows per output tile: 32 output columns
RUN = 64  # a block's rows' codes are interleaved in runs of up to this many bytes


@asc2.jit
def dequant_matmul_kernel(x_ptr, c_ptr, s_ptr, z_ptr, o_ptr, m, n, k, tiles, groups, group,
                          xs0, xs1, os0, os1, cs0, cs1, ss0, ss1, bits: asc.ConstExpr[int],
                          asym: asc.ConstExpr[bool], chunk: asc.ConstExpr[int],
                          tile_m: asc.ConstExpr[int], row_tiles: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [m, k], [xs0, xs1])
    o_gm = asc2.tensor(o_ptr, [m, n], [os0, os1])
    row_bytes = group * bits // 8  # one weight row's codes of one group
    # Block (t, g): 4 scales [, 4 zero points], then the 4 rows' codes in runs of `chunk` bytes,
    # run c of rows 0-3 at [4c, 4c + 4) (the launch's views; int4: one run per row).
    c_gm = asc2.tensor(c_ptr, [tiles, groups, 4 * (row_bytes // chunk), chunk],
                       [cs0, cs1, chunk, 1])
    s_gm = asc2.tensor(s_ptr, [tiles, groups, 4], [ss0, ss1, 1])
    z_gm = asc2.tensor(z_ptr, [tiles, groups, 4], [ss0, ss1, 1])
    cols = 4 * row_tiles
    out_tiles = asc2.ceildiv(tiles, row_tiles)
    for u in asc2.range(asc2.block_idx(), asc2.ceildiv(m, tile_m) * out_tiles,
                        asc2.block_num()):
        row = u // out_tiles * tile_m
        t0 = u % out_tiles * row_tiles
        acc = asc2.zeros([tile_m, cols], asc2.float32)
        for g in asc2.range(groups):
            # Tiles past the last load scale 0, so their weights are 0 whatever the code.
            s = asc2.load(s_gm, [row_tiles, 1, 4], offsets=[t0, g, 0]).reshape(cols, 1)
            if bits == 4:
                if asym:
                    z = asc2.load(z_gm, [row_tiles, 1, 4], offsets=[t0, g, 0]).reshape(cols, 1)
                else:
                    z = 8.0  # symmetric int4: q + 8 is stored
                # Byte i of a row's group: code i in the low nibble, code i + group/2 in the high.
                b = asc2.load(c_gm, [row_tiles, 1, 4, chunk], offsets=[t0, g, 0, 0])
                b = b.reshape(cols, chunk)
                w_lo = ((b & 15).to(asc2.float32) - z) * s
                w_hi = ((b >> 4).to(asc2.float32) - z) * s
                x_lo = asc2.load(x_gm, [tile_m, chunk], offsets=[row, g * group])
                x_hi = asc2.load(x_gm, [tile_m, chunk], offsets=[row, g * group + chunk])
                acc = asc2.matmul_acc(acc, x_lo.to(asc2.float32), w_lo.T)
                acc = asc2.matmul_acc(acc, x_hi.to(asc2.float32), w_hi.T)
            else:
                # Signed int8 codes in K order, a run at a time.
                for c in asc2.range(group // chunk):
                    q = asc2.load(c_gm, [row_tiles, 1, 4, chunk], offsets=[t0, g, 4 * c, 0])
                    w = q.reshape(cols, chunk).to(asc2.float32) * s
                    xt = asc2.load(x_gm, [tile_m, chunk], offsets=[row, g * group + c * chunk])
                    acc = asc2.matmul_acc(acc, xt.to(asc2.float32), w.T)
        asc2.store(acc, o_gm, offsets=[row, 4 * t0])


def parse_layout(qweight):
    """The header of a quantize_weight buffer, checked against the buffer: a dict of bits,
    symmetric, group (0 = per channel), n, k, tiles, k_p, group_k (G), groups (K_p / G) and
    block_bytes. Raises ValueError naming qweight on anything foreign or truncated."""
    if not isinstance(qweight, torch.Tensor) or qweight.dtype != torch.uint8 or \
            qweight.dim() != 1 or not qweight.is_contiguous():
        raise ValueError("qweight: expected the contiguous 1-D torch.uint8 buffer of "
                         "tileops.ops.quantize_weight")
    if qweight.numel() < HEADER:
        raise ValueError(f"qweight: {qweight.numel()} bytes, shorter than the {HEADER}-byte header")
    head = qweight[:HEADER].numpy()
    magic, = head[0:4].view("<u4")
    version, = head[4:6].view("<u2")
    bits, symmetric = int(head[6]), int(head[7])
    group, reserved = (int(v) for v in head[8:16].view("<i4"))
    n, k, total = (int(v) for v in head[16:40].view("<i8"))
    if magic != MAGIC or version != 2 or reserved != 0 or head[40:].any():
        raise ValueError("qweight: not a version-2 quantize_weight buffer (magic, version or "
                         "reserved fields)")
    valid = (bits == 8 and symmetric == 1 and group in (0, 32, 64, 128)) or \
        (bits == 4 and symmetric in (0, 1) and group in (32, 64, 128))
    if not valid or n < 1 or k < 1 or (group and k % group):
        raise ValueError(f"qweight: unsupported attributes bits={bits}, symmetric={symmetric}, "
                         f"group_size={group}, N={n}, K={k}")
    k_p = k if group else (k + 63) // 64 * 64
    group_k = group or k_p
    block_bytes = 16 * (2 - symmetric if bits == 4 else 1) + 4 * group_k * bits // 8
    tiles = (n + 3) // 4
    size = HEADER + tiles * (k_p // group_k) * block_bytes
    if total != size or qweight.numel() != size:
        raise ValueError(f"qweight: the header implies {size} bytes, it says {total} and the "
                         f"buffer holds {qweight.numel()}")
    return {"bits": bits, "symmetric": bool(symmetric), "group": group, "n": n, "k": k,
            "tiles": tiles, "k_p": k_p, "group_k": group_k, "groups": k_p // group_k,
            "block_bytes": block_bytes, "run": min(RUN, group_k * bits // 8)}


def _views(qweight, lay):
    """Strided views of the buffer: codes [tiles, groups, 4 · runs, run] (int8 or uint8; run c
    of row r at 4c + r), scales and zero points [tiles, groups, 4] float32 (zero points: the
    scales again if symmetric)."""
    bb, groups, tiles, run = lay["block_bytes"], lay["groups"], lay["tiles"], lay["run"]
    row_bytes = lay["group_k"] * lay["bits"] // 8
    extra = 16 if lay["bits"] == 4 and not lay["symmetric"] else 0
    raw = qweight.view(torch.int8) if lay["bits"] == 8 else qweight
    codes = raw.as_strided((tiles, groups, 4 * (row_bytes // run), run), (groups * bb, bb, run, 1),
                           HEADER + 16 + extra)
    words = qweight.view(torch.float32)  # the size is a multiple of 4 (block_bytes is)
    shape, strides = (tiles, groups, 4), (groups * bb // 4, bb // 4, 1)
    scales = words.as_strided(shape, strides, HEADER // 4)
    zeros = words.as_strided(shape, strides, (HEADER + 16) // 4) if extra else scales
    return codes, scales, zeros


def dequant_matmul(x, qweight, out=None, core_num=0):
    """x: [M, K] float32 or bfloat16 (any strides); qweight: the buffer of
    tileops.ops.quantize_weight(w [N, K], ...). Returns out = x @ dequantize(qweight)^T,
    [M, N] float32 (written into ``out`` when given)."""
    lay = parse_layout(qweight)
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != lay["k"]:
        raise ValueError(f"x: expected [M, {lay['k']}] (K of qweight), got "
                         f"{getattr(x, 'shape', type(x))}")
    if x.dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"x: expected float32 or bfloat16, got {x.dtype}")
    m, n = x.shape[0], lay["n"]
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32)
    if list(out.shape) != [m, n] or out.dtype != torch.float32:
        raise ValueError(f"out: expected float32 [{m}, {n}], got {out.dtype} {list(out.shape)}")
    codes, scales, zeros = _views(qweight, lay)
    chunk = lay["run"]  # int4: all of a row's group (low nibbles, then the high ones)
    if m > 0:
        dequant_matmul_kernel[core_num](
            x, codes, scales, zeros, out, m, n, lay["k"], lay["tiles"], lay["groups"],
            lay["group_k"], *x.stride(), *out.stride(), codes.stride(0), codes.stride(1),
            scales.stride(0), scales.stride(1), lay["bits"], not lay["symmetric"], chunk,
            TILE_M, ROW_TILES)
    return out


def dequantize_reference(qweight):
    """float64 numpy W [N, K] from the buffer, decoded from the documented layout
    (docs/quantized-weights.md) byte by byte, independently of the kernel's views."""
    lay = parse_layout(qweight)
    buf = qweight.numpy()
    n, k, bb, groups, gk = lay["n"], lay["k"], lay["block_bytes"], lay["groups"], lay["group_k"]
    w = np.zeros((lay["tiles"] * 4, lay["k_p"]))
    for t in range(lay["tiles"]):
        for g in range(groups):
            at = HEADER + (t * groups + g) * bb
            scale = buf[at:at + 16].view("<f4").astype(np.float64)
            at += 16
            zero = np.full(4, 8.0 if lay["bits"] == 4 else 0.0)
            if lay["bits"] == 4 and not lay["symmetric"]:
                zero = buf[at:at + 16].view("<f4").astype(np.float64)
                at += 16
            row_bytes = gk * lay["bits"] // 8
            run = min(64, row_bytes)  # the rows' codes interleaved in runs of this many bytes
            for r in range(4):
                b = np.array([buf[at + i // run * 4 * run + r * run + i % run]
                              for i in range(row_bytes)], dtype=np.uint8)
                if lay["bits"] == 8:
                    q = b.view(np.int8).astype(np.float64)
                else:
                    q = np.concatenate([b & 15, b >> 4]).astype(np.float64)
                w[4 * t + r, g * gk:(g + 1) * gk] = scale[r] * (q - zero[r])
    return w[:n, :k]


def reference(x, qweight):
    """float64 numpy x @ W^T with W decoded by dequantize_reference."""
    return x.double().numpy() @ dequantize_reference(qweight).T


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and torch on the dequantised weight."""
    from tileops import ops
    m, n, k, bits, group, symmetric = shape
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((m, k), generator=gen).to(getattr(torch, dtype))
    q = ops.quantize_weight(torch.randn((n, k), generator=gen), bits=bits, group_size=group,
                            symmetric=bool(symmetric))
    w = torch.from_numpy(dequantize_reference(q)).float()
    out = torch.empty((m, n), dtype=torch.float32)
    xf = x.float()
    return {"run": lambda: dequant_matmul(x, q, out), "torch": lambda: xf @ w.T,
            "flops": 2.0 * m * n * k}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    from tileops import ops
    xs, ws = torch.randn((5, 128)), torch.randn((9, 128))
    for kw in ({"bits": 8}, {"bits": 4, "group_size": 32}, {"bits": 4, "group_size": 64,
                                                              "symmetric": False}):
        qw = ops.quantize_weight(ws, **kw)
        np.testing.assert_allclose(dequant_matmul(xs, qw).numpy(), reference(xs, qw),
                                   rtol=1e-4, atol=1e-4)
