"""The golden kernels of issue #6 written in Python as users would, launched with numpy arrays
and with torch tensors (bit-for-bit identical results), on 1, 3 and 16 blocks, with tails,
against float64 references computed independently."""

import math

import numpy as np
import pytest

from tileops import tl
from tl_support import CORE_NUMS, check, f64, launch_both, poisoned, rand


@tl.jit
def vadd(x: tl.GlobalAddress, y: tl.GlobalAddress, z: tl.GlobalAddress, n: int,
         tile: tl.ConstExpr[int]):
    tx, ty, tz = tl.tensor(x, [n]), tl.tensor(y, [n]), tl.tensor(z, [n])
    for i in tl.range(tl.block_idx(), tl.ceildiv(n, tile), tl.block_num()):
        a = tl.load(tx, [tile], offsets=[i * tile])
        b = tl.load(ty, [tile], offsets=[i * tile])
        tl.store(a + b, tz, offsets=[i * tile])


# covers: jit GlobalAddress Int ConstExpr launch tensor load store add range block_idx
# block_num ceildiv
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "int32"])
@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_vadd(dtype, n):
    x, y = rand([n], dtype, 1), rand([n], dtype, 2)
    for cores in CORE_NUMS:
        _, _, z, _, _ = launch_both(lambda *a: vadd[cores](*a), x, y, poisoned([n], dtype), n, 128)
        check(z, f64(x) + f64(y), dtype)


def unary_kernel(f):
    """y = f(x, alpha) over a 1-D tensor in tiles of `tile` lanes."""

    @tl.jit
    def kernel(x: tl.GlobalAddress, y: tl.GlobalAddress, n: int, alpha: float,
               tile: tl.ConstExpr[int]):
        tx, ty = tl.tensor(x, [n]), tl.tensor(y, [n])
        for i in tl.range(tl.block_idx(), tl.ceildiv(n, tile), tl.block_num()):
            tl.store(f(tl.load(tx, [tile], offsets=[i * tile]), alpha), ty, offsets=[i * tile])

    return kernel


ABS = unary_kernel(lambda x, a: tl.abs(x))
LEAKY_RELU = unary_kernel(lambda x, a: tl.where(x > 0, x, x * a))
GELU = unary_kernel(lambda x, a: tl.gelu(x))
GELU_TANH = unary_kernel(lambda x, a: tl.gelu(x, approximate=True))
GELU_MANUAL = unary_kernel(lambda x, a: 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)))
_ERF = np.vectorize(math.erf)


def gelu_ref(v):
    return 0.5 * v * (1 + _ERF(v / math.sqrt(2)))


def gelu_tanh_ref(v):
    return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


# covers: abs where gt mul gelu gelu_tanh erf Float scalar_operands
@pytest.mark.parametrize("kernel,ref,dtype,tile", [
    (ABS, np.abs, "float32", 128), (ABS, np.abs, "float16", 128), (ABS, np.abs, "bfloat16", 128),
    (LEAKY_RELU, lambda v: np.where(v > 0, v, v * 0.25), "float32", 64),
    (LEAKY_RELU, lambda v: np.where(v > 0, v, v * 0.25), "float16", 1024),
    *[(GELU, gelu_ref, d, t) for d in ("float32", "float16") for t in (64, 128, 1024)],
    *[(GELU_TANH, gelu_tanh_ref, d, t) for d in ("float32", "float16") for t in (64, 128, 1024)],
    (GELU_MANUAL, gelu_ref, "float32", 128),
])
def test_unary_golden(kernel, ref, dtype, tile):
    n = 3000
    x = rand([n], dtype, 3, -5, 5)
    for cores in CORE_NUMS:
        _, y, _, _, _ = launch_both(lambda *a: kernel[cores](*a), x, poisoned([n], dtype), n,
                                    0.25, tile)
        check(y, ref(f64(x)), dtype)


@tl.jit
def row_sum(x: tl.GlobalAddress, out: tl.GlobalAddress, rows: int, cols: int,
            block: tl.ConstExpr[int]):
    tx, to = tl.tensor(x, [rows, cols]), tl.tensor(out, [rows])
    for r in tl.range(tl.block_idx(), rows, tl.block_num()):
        row = tl.load(tx, [1, block], offsets=[r, 0])
        tl.store(tl.reduce_sum(row.to(tl.float32)).to(to.dtype), to, offsets=[r])


@tl.jit
def row_softmax(x: tl.GlobalAddress, out: tl.GlobalAddress, rows: int, cols: int,
                block: tl.ConstExpr[int]):
    tx, to = tl.tensor(x, [rows, cols]), tl.tensor(out, [rows, cols])
    for r in tl.range(tl.block_idx(), rows, tl.block_num()):
        row = tl.load(tx, [1, block], offsets=[r, 0], pad_value=-math.inf)
        tl.store(tl.softmax(row), to, offsets=[r, 0])


# covers: reduce_sum softmax pad_value to
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("rows,cols,block", [(7, 1000, 1024), (3, 64, 64), (5, 1, 16)])
def test_row_reduce_sum_and_softmax(dtype, rows, cols, block):
    x = rand([rows, cols], dtype, 4, -4, 4)
    xs = f64(x)
    e = np.exp(xs - xs.max(axis=1, keepdims=True))
    for cores in CORE_NUMS:
        _, s, _, _, _ = launch_both(lambda *a: row_sum[cores](*a), x, poisoned([rows], dtype),
                                    rows, cols, block)
        check(s, xs.sum(axis=1), dtype, tol_scale=8)  # up to 1000 rounded inputs, rounded once
        _, sm, _, _, _ = launch_both(lambda *a: row_softmax[cores](*a), x,
                                     poisoned([rows, cols], dtype), rows, cols, block)
        check(sm, e / e.sum(axis=1, keepdims=True), dtype)


@tl.jit
def rms_norm_any_width(x: tl.GlobalAddress, w: tl.GlobalAddress, y: tl.GlobalAddress, rows: int,
                       cols: int, eps: float, tile: tl.ConstExpr[int]):
    tx, tw, ty = tl.tensor(x, [rows, cols]), tl.tensor(w, [cols]), tl.tensor(y, [rows, cols])
    chunks = tl.ceildiv(cols, tile)
    for r in tl.range(tl.block_idx(), rows, tl.block_num()):
        acc = tl.Var(tl.zeros([1, tile], tl.float32))  # loop-carried across the chunks
        for c in tl.range(chunks):
            v = tl.load(tx, [1, tile], offsets=[r, c * tile]).to(tl.float32)
            acc += v * v
        rstd = tl.rsqrt(tl.reduce_sum(acc) / cols + eps)
        for c in tl.range(chunks):  # masked tail: the last chunk's out-of-bounds lanes pad 0
            v = tl.load(tx, [1, tile], offsets=[r, c * tile]).to(tl.float32)
            g = tl.load(tw, [tile], offsets=[c * tile]).to(tl.float32)
            tl.store((v * rstd * g).to(ty.dtype), ty, offsets=[r, c * tile])


# covers: Var rsqrt div rms_norm
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("cols", [1, 100, 256, 1000, 4099])
def test_rms_norm_any_width(dtype, cols):
    rows = 5
    x, w = rand([rows, cols], dtype, 6), rand([cols], dtype, 7)
    xs = f64(x)
    ref = xs / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + 1e-6) * f64(w)
    for cores in CORE_NUMS:
        _, _, y, *_ = launch_both(lambda *a: rms_norm_any_width[cores](*a), x, w,
                                  poisoned([rows, cols], dtype), rows, cols, 1e-6, 256)
        check(y, ref, dtype)
    assert rms_norm_any_width.num_specialisations <= 4  # one per dtype: never per width


@tl.jit
def layer_norm(x: tl.GlobalAddress, g: tl.GlobalAddress, b: tl.GlobalAddress,
               y: tl.GlobalAddress, stats: tl.GlobalAddress, rows: int,
               width: tl.ConstExpr[int]):
    tx, ty, ts = tl.tensor(x, [rows, width]), tl.tensor(y, [rows, width]), tl.tensor(stats,
                                                                                   [rows, 2])
    gamma = tl.load(tl.tensor(g, [width]), [width], offsets=[0])
    beta = tl.load(tl.tensor(b, [width]), [width], offsets=[0])
    for r in tl.range(tl.block_idx() * 2, rows, tl.block_num() * 2):
        out, mean, rstd = tl.layer_norm(tl.load(tx, [2, width], offsets=[r, 0]), gamma, beta,
                                        1e-5, return_stats=True)
        tl.store(out, ty, offsets=[r, 0])
        tl.store(tl.concat([mean, rstd], axis=1), ts, offsets=[r, 0])


# covers: layer_norm concat
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_layer_norm_with_stats(dtype):
    rows, width = 7, 96
    x, g, b = rand([rows, width], dtype, 8), rand([width], dtype, 9), rand([width], dtype, 10)
    xs = f64(x)
    mean = xs.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((xs - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    for cores in CORE_NUMS:
        _, _, _, y, stats, *_ = launch_both(lambda *a: layer_norm[cores](*a), x, g, b,
                                            poisoned([rows, width], dtype),
                                            poisoned([rows, 2], "float32"), rows, width)
        check(y, (xs - mean) * rstd * f64(g) + f64(b), dtype)
        check(stats, np.concatenate([mean, rstd], axis=1), "float32")


@tl.jit
def tiled_matmul(a: tl.GlobalAddress, bt: tl.GlobalAddress, bias: tl.GlobalAddress,
                 c: tl.GlobalAddress, m: int, n: int, k: int, bm: tl.ConstExpr[int],
                 bk: tl.ConstExpr[int]):
    ta, tb, tc = tl.tensor(a, [m, k]), tl.tensor(bt, [n, k]), tl.tensor(c, [m, n])
    nt = tl.ceildiv(n, bm)
    for t in tl.range(tl.block_idx(), tl.ceildiv(m, bm) * nt, tl.block_num()):
        i, j = (t // nt) * bm, (t % nt) * bm
        acc = tl.Var(tl.zeros([bm, bm], tl.float32))
        for p in tl.range(0, k, bk):
            acc.set(tl.matmul_acc(acc, tl.load(ta, [bm, bk], offsets=[i, p]),
                                  tl.load(tb, [bm, bk], offsets=[j, p]).T))
        tl.store(acc + tl.load(tl.tensor(bias, [n]), [bm], offsets=[j]), tc, offsets=[i, j])


# covers: matmul_acc T floordiv mod broadcasting
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_tiled_matmul(dtype):
    m, n, k = 37, 29, 19
    a, bt, bias = rand([m, k], dtype, 11), rand([n, k], dtype, 12), rand([n], "float32", 13)
    ref = f64(a) @ f64(bt).T + f64(bias)
    for cores in CORE_NUMS:
        *_, c, _, _, _, _, _ = launch_both(lambda *x: tiled_matmul[cores](*x), a, bt, bias,
                                           poisoned([m, n], "float32"), m, n, k, 16, 8)
        check(c, ref, "float32")


@tl.jit
def block_ids(out: tl.GlobalAddress):
    tl.store(tl.block_idx() + 1, tl.tensor(out, [tl.block_num()]), offsets=[tl.block_idx()])


# covers: store_scalar
@pytest.mark.parametrize("cores", [1, 2, 3, 16])
def test_scalar_store_from_every_block(cores):
    (out,) = launch_both(lambda *a: block_ids[cores](*a), poisoned([cores], "float32"))
    assert out.tolist() == [float(b + 1) for b in range(cores)]  # pyasc drops even blocks
