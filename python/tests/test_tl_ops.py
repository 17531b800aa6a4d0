"""tl functions and Value operators from Python, on one [4, 8] tile, against numpy float64
references: unary and binary functions (both operand orders with Python numbers), bitwise
ops, comparisons, casts with round modes, reductions, scans, shape ops and tile creation."""

import math
import operator

import numpy as np
import pytest

from tileops import tl
from tl_support import check

GA = tl.GlobalAddress
SHAPE = (4, 8)
_ERF = np.vectorize(math.erf)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


UNARY = {
    "abs": np.abs, "ceil": np.ceil, "floor": np.floor, "round": np.rint, "trunc": np.trunc,
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v), "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "erf": _ERF, "sigmoid": _sigmoid, "relu": lambda v: np.maximum(v, 0),
    "silu": lambda v: v * _sigmoid(v), "softplus": lambda v: np.log1p(np.exp(v)),
    "negative": np.negative, "reciprocal": lambda v: 1 / v,
    "isnan": lambda v: np.isnan(v).astype(np.float64),
    "isinf": lambda v: np.isinf(v).astype(np.float64),
}


@tl.jit
def unary(x: GA, y: GA, name: tl.ConstExpr[str]):
    tx, ty = tl.tensor(x, list(SHAPE)), tl.tensor(y, list(SHAPE))
    tl.store(getattr(tl, name)(tl.load(tx, SHAPE, offsets=[0, 0])).to(tl.float32), ty,
             offsets=[0, 0])


# covers: abs ceil floor round trunc exp exp2 expm1 log log2 log1p sqrt rsqrt sin cos tan sinh
# cosh tanh erf sigmoid relu silu softplus negative reciprocal isnan isinf
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    rng = np.random.default_rng(1)
    low = 0.1 if name in ("log", "log2", "log1p", "sqrt", "rsqrt") else -1.4
    x = rng.uniform(low, 1.4, SHAPE).astype(np.float32)
    x[0, :3] = [0.5, 1.5, -2.5] if low < 0 else x[0, :3]  # rint ties to even
    y = np.full(SHAPE, np.nan, np.float32)
    unary[1](x, y, name)
    check(y, UNARY[name](x.astype(np.float64)), "float32")


BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "maximum": np.maximum, "minimum": np.minimum, "eq": operator.eq, "ne": operator.ne,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}
FUNCTIONS = {"maximum": tl.maximum, "minimum": tl.minimum}


@tl.jit
def binary(a: GA, b: GA, out: GA, name: tl.ConstExpr[str], s: tl.ConstExpr[float]):
    ta, tb, to = tl.tensor(a, list(SHAPE)), tl.tensor(b, list(SHAPE)), tl.tensor(out, [3, *SHAPE])
    x, y = tl.load(ta, SHAPE, offsets=[0, 0]), tl.load(tb, SHAPE, offsets=[0, 0])
    op = FUNCTIONS.get(name, BINARY[name])
    for k, r in enumerate([op(x, y), op(x, s), op(s, y)]):  # tile-tile, tile-number, number-tile
        tl.store(tl.expand_dims(r.to(tl.float32), 0), to, offsets=[k, 0, 0])


# covers: add sub mul div floordiv mod pow maximum minimum eq ne lt le gt ge scalar_operands
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_both_operand_orders(name):
    rng = np.random.default_rng(2)
    a = rng.uniform(0.5, 3, SHAPE).astype(np.float32)
    b = rng.uniform(0.5, 3, SHAPE).astype(np.float32)
    b[0, :2] = a[0, :2]  # equal lanes for the comparisons
    out = np.full((3, *SHAPE), np.nan, np.float32)
    binary[1](a, b, out, name, 1.75)
    f, a64, b64 = BINARY[name], a.astype(np.float64), b.astype(np.float64)
    ref = np.stack([f(a64, b64), f(a64, 1.75), f(1.75, b64)]).astype(np.float64)
    check(out, ref, "float32")


@tl.jit
def bitwise(a: GA, b: GA, out: GA):
    ta, tb, to = tl.tensor(a, [8]), tl.tensor(b, [8]), tl.tensor(out, [9, 8])
    x, y = tl.load(ta, [8], offsets=[0]), tl.load(tb, [8], offsets=[0])
    results = [x & y, x | y, x ^ y, ~x, x << 2, 3 << y, x >> 1, 0xff & x,
               tl.logical_and(x > 0, tl.logical_or(y > 2, tl.logical_not(x > 5))).to(tl.int32)]
    for k, r in enumerate(results):
        tl.store(tl.expand_dims(r, 0), to, offsets=[k, 0])


# covers: bitwise_and bitwise_or bitwise_xor bitwise_not shl shr logical_and logical_or
# logical_not
def test_bitwise_and_logical():
    a = np.array([-7, -1, 0, 1, 2, 5, 6, 300], np.int32)
    b = np.array([3, 1, 2, 0, 4, 1, 2, 3], np.int32)
    out = np.full((9, 8), -12345, np.int32)
    bitwise[1](a, b, out)
    ref = [a & b, a | b, a ^ b, ~a, a << 2, 3 << b, a >> 1, 0xff & a,
           ((a > 0) & ((b > 2) | ~(a > 5))).astype(np.int32)]
    assert out.tolist() == np.stack(ref).tolist()


@tl.jit
def casts(x: GA, out: GA, n: tl.ConstExpr[int]):
    v = tl.load(tl.tensor(x, [n]), [n], offsets=[0])
    to = tl.tensor(out, [5, n])
    for k, mode in enumerate(["rint", "floor", "ceil", "trunc", tl.RoundMode.round_half_away]):
        tl.store(tl.expand_dims(v.to(tl.int32, round_mode=mode), 0), to, offsets=[k, 0])


# covers: to round_modes
def test_casts_with_round_modes():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.2, -1.7], np.float32)
    out = np.zeros((5, 8), np.int32)
    casts[1](x, out, 8)
    half_away = np.sign(x) * np.floor(np.abs(x) + 0.5)
    ref = [np.rint(x), np.floor(x), np.ceil(x), np.trunc(x), half_away]
    assert out.tolist() == np.stack(ref).astype(np.int32).tolist()


@tl.jit
def bitcasts(x: GA, bits: GA, back: GA):
    v = tl.load(tl.tensor(x, [8]), [8], offsets=[0])
    b = v.bitcast(tl.int32)
    tl.store(b, tl.tensor(bits, [8]), offsets=[0])
    tl.store((b ^ -(1 << 31)).bitcast(tl.float32), tl.tensor(back, [8]), offsets=[0])


# covers: bitcast
def test_bitcast_reads_the_same_bits():
    x = np.array([1.0, -2.5, 0.0, -0.0, np.inf, -np.inf, 3e-42, 7.25], np.float32)
    bits, back = np.zeros(8, np.int32), np.zeros(8, np.float32)
    bitcasts[1](x, bits, back)
    assert bits.tolist() == x.view(np.int32).tolist()
    assert back.view(np.int32).tolist() == (-x).view(np.int32).tolist()


@tl.jit
def reductions(x: GA, out: GA, idx: GA):
    v = tl.load(tl.tensor(x, list(SHAPE)), SHAPE, offsets=[0, 0])
    to, ti = tl.tensor(out, [8, 4]), tl.tensor(idx, [2, 4])
    rows = [tl.reduce_sum(v, 1), tl.reduce_max(v, [1]), tl.reduce_min(v, dims=1),
            tl.reduce_prod(v, 1), tl.squeeze(tl.reduce_mean(v, 1, keep_dims=True), 1),
            tl.all(v > -1, 1).to(tl.float32), tl.any(v > 1.3, 1).to(tl.float32),
            tl.broadcast_to(tl.reduce_sum(v), [4])]
    for k, r in enumerate(rows):
        tl.store(tl.expand_dims(r, 0), to, offsets=[k, 0])
    tl.store(tl.expand_dims(tl.argmax(v, 1), 0), ti, offsets=[0, 0])
    tl.store(tl.argmin(v, 1, keep_dims=True).T, ti, offsets=[1, 0])


# covers: reduce_sum reduce_max reduce_min reduce_prod reduce_mean all any argmax argmin
# keep_dims squeeze
def test_reductions():
    x = np.random.default_rng(3).uniform(-1.5, 1.5, SHAPE).astype(np.float32)
    out, idx = np.full((8, 4), np.nan, np.float32), np.full((2, 4), -1, np.int32)
    reductions[1](x, out, idx)
    v = x.astype(np.float64)
    ref = [v.sum(1), v.max(1), v.min(1), v.prod(1), v.mean(1), (v > -1).all(1), (v > 1.3).any(1),
           np.full(4, v.sum())]
    check(out, np.stack(ref).astype(np.float64), "float32")
    assert idx.tolist() == [v.argmax(1).tolist(), v.argmin(1).tolist()]


@tl.jit
def shapes_and_creation(x: GA, out: GA):
    v = tl.load(tl.tensor(x, list(SHAPE)), SHAPE, offsets=[0, 0])
    to = tl.tensor(out, [10, 32])
    results = [tl.ravel(v), tl.ravel(tl.reshape(v, [8, 4])), tl.ravel(tl.transpose(v)),
               tl.ravel(v.T), tl.ravel(tl.cumsum(v, 1)),
               tl.ravel(tl.squeeze(tl.expand_dims(v, 0), 0) + tl.zeros_like(v)),
               tl.ravel(tl.concat([tl.copy(v, [2, 8], [2, 0]), tl.full([2, 8], 2.5, tl.float32)],
                                  0)),
               tl.ravel(tl.full_like(v, -1.0) + tl.broadcast_to(tl.copy(v, [1, 8], [0, 0]),
                                                               SHAPE)),
               tl.ravel(tl.softmax(v, axis=0)),
               tl.ravel(tl.concat([v @ tl.full([8, 4], 0.5, tl.float32),
                                   tl.matmul(v, tl.copy(v.T, [8, 4], [0, 0]),
                                             bias=tl.full([4], 1.0, tl.float32))], 1))]
    for k, r in enumerate(results):
        tl.store(tl.expand_dims(r, 0), to, offsets=[k, 0])


# covers: ravel reshape transpose T cumsum expand_dims zeros_like copy concat full full_like
# zeros softmax matmul matmul_bias
def test_shape_ops_and_creation():
    x = np.random.default_rng(4).uniform(-1, 1, SHAPE).astype(np.float32)
    out = np.full((10, 32), np.nan, np.float32)
    shapes_and_creation[1](x, out)
    v = x.astype(np.float64)
    e = np.exp(v - v.max(0))
    ref = [v.ravel(), v.reshape(8, 4).ravel(), v.T.ravel(), v.T.ravel(), np.cumsum(v, 1).ravel(),
           v.ravel(), np.concatenate([v[2:4], np.full((2, 8), 2.5)]).ravel(),
           (v[0:1] - 1.0 + np.zeros(SHAPE)).ravel(), (e / e.sum(0)).ravel(),
           np.concatenate([v @ np.full((8, 4), 0.5), v @ v.T[:, 0:4] + 1.0], 1).ravel()]
    check(out, np.stack(ref), "float32")


@tl.jit
def promotion(h: GA, f: GA, i: GA, out: GA):
    x16 = tl.load(tl.tensor(h, [4]), [4], offsets=[0])
    x32 = tl.load(tl.tensor(f, [4]), [4], offsets=[0])
    xi = tl.load(tl.tensor(i, [4]), [4], offsets=[0])
    assert (x16 + 1.5).dtype == tl.float16  # the tile's dtype wins over a Python number
    assert (x16 + x32).dtype == tl.float32  # the wider float wins
    assert (x16 + x16.to(tl.bfloat16)).dtype == tl.float32
    assert (xi + 1).dtype == tl.int32 and (xi + 0.5).dtype == tl.float32  # float beats int
    assert (xi / 2).dtype == tl.float32 and (xi // 2).dtype == tl.int32
    tl.store(tl.concat([x16 + x32, xi + 0.5], 0), tl.tensor(out, [8]), offsets=[0])


# covers: promotion
def test_dtype_promotion():
    h = np.array([1.5, -2, 3, 0.25], np.float16)
    f = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    i = np.array([1, -2, 3, 7], np.int32)
    out = np.zeros(8, np.float32)
    promotion[1](h, f, i, out)
    ref = np.concatenate([h.astype(np.float64) + f.astype(np.float64), i + 0.5])
    check(out, ref, "float32")


@tl.jit
def strided_column(x: GA, y: GA, rows: int, ld: int):
    col = tl.tensor(x, [rows, 1], strides=[ld, 1])  # a column of a row-major [rows, ld] buffer
    tl.store(tl.load(col, [8, 1], offsets=[0, 0]) * 2.0, tl.tensor(y, [rows, 1]), offsets=[0, 0])


# covers: tensor_strides
def test_tensor_with_strides():
    buf = np.arange(30, dtype=np.float32).reshape(6, 5)
    y = np.full((6, 1), np.nan, np.float32)
    strided_column[1](buf[:, 2], y, 6, 5)  # a non-contiguous view: its first element's address
    assert y[:, 0].tolist() == (buf[:, 2] * 2).tolist()


@tl.jit
def numpy_scalars(x: GA):
    t = tl.tensor(x, [4])
    v = tl.load(t, [4], offsets=[0])
    tl.store(np.float32(2) * v + v * np.float64(0.5) - np.int64(1) + (np.int32(3) > v), t,
             offsets=[0])


# covers: scalar_operands
def test_numpy_scalars_on_either_side():
    x = np.arange(4, dtype=np.float32)
    numpy_scalars[1](x)
    assert x.tolist() == [0.0, 2.5, 5.0, 6.5]



@tl.jit
def hinted_row_sums(x: GA, y: GA, rows: int):
    tx, ty = tl.tensor(x, [rows, 100]), tl.tensor(y, [rows, 1])
    for r in tl.range(rows):
        tl.prefetch(tx, [1, 128], offsets=[r + 1, 0])  # crosses the row's end: only a hint
        tl.prefetch(tx, [1, 64], offsets=[r + 1, 0])
        v = tl.load(tx, [1, 128], offsets=[r, 0])  # 28 padding lanes of 0
        tl.store(tl.reduce_sum(tl.exp(v), 1, keep_dims=True), ty, offsets=[r, 0])


@tl.jit
def prefetch_rank_mismatch(x: GA):
    tl.prefetch(tl.tensor(x, [4]), [4, 1], offsets=[0])


# covers: prefetch
def test_prefetch_is_only_a_hint():
    x = np.random.default_rng(4).uniform(-1, 1, (5, 100)).astype(np.float32)
    y = np.full((5, 1), np.nan, np.float32)
    hinted_row_sums[1](x, y, 5)
    check(y, np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True) + 28, "float32")
    with pytest.raises(ValueError, match="prefetch"):
        prefetch_rank_mismatch[1](x)


_MODES = ["rint", "floor", "ceil", "trunc", "round_half_away"]


def _casts_fp8(x: GA, o0: GA, o1: GA, o2: GA, o3: GA, o4: GA, n: tl.ConstExpr[int]):
    v = tl.load(tl.tensor(x, [n]), [n], offsets=[0])
    for out, mode in zip([o0, o1, o2, o3, o4], _MODES):
        tl.store(v.to(out.dtype, round_mode=mode), tl.tensor(out, [n]), offsets=[0])


def _fp8_reference(table, overflow, ties_away, v, mode):
    """The neighbour of v by value among the decoded codes (+-inf one gap past the range)."""
    if np.isnan(v) or v in table:
        return v
    lo = max((t for t in table if t < v), default=-np.inf)
    hi = min((t for t in table if t > v), default=np.inf)
    if mode in ("rint", "round_half_away"):
        dl, dh = v - max(lo, -overflow), min(hi, overflow) - v
        if dl != dh:
            return lo if dl < dh else hi
        return hi if v > 0 else lo  # ties: probed only where away and even agree
    return {"floor": lo, "ceil": hi, "trunc": lo if v > 0 else hi}[mode]


# covers: to round_modes
@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_directed_rounding_into_hifloat8_steps_by_value(backend):
    import torch
    from tileops import ops
    codes = torch.arange(256, dtype=torch.uint8)
    decoded = ops.cast(codes, torch.empty(256), input_dtype="hifloat8").numpy().astype(np.float64)
    table = sorted(set(decoded[np.isfinite(decoded)].tolist()))
    # Every value, the quarter points between neighbours (no ties), and the examples.
    xs = table + [a + (b - a) * f for a, b in zip(table, table[1:]) for f in (0.25, 0.75)]
    xs = np.array(xs + [3.9, 0.95, 4.959e-5, -3.9, 1e5, -1e5], np.float64)
    outs = [np.zeros(len(xs), np.uint8) for _ in _MODES]
    kernel = tl.jit(backend=backend)(_casts_fp8)
    kernel[1](xs, *[tl.reinterpret(o, tl.hifloat8) for o in outs], len(xs))
    for mode, out in zip(_MODES, outs):
        got = decoded[out]
        want = np.array([_fp8_reference(table, 49152.0, True, v, mode) for v in xs])
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (mode, xs[bad[:5]], got[bad[:5]], want[bad[:5]])


def _order(line, descending):
    """Positions of `line` in tl.sort's order: stable, NaN above +inf, -0.0 == 0.0 (a key
    sort written here, independent of both backends)."""
    keys = [(bool(np.isnan(v)), 0.0 if np.isnan(v) else float(v)) for v in line]
    # sorted(reverse=True) keeps equal keys in their order too, as tl.sort promises.
    return sorted(range(len(line)), key=lambda j: keys[j], reverse=descending)


def _sorts(x: GA, vals: GA, idx: GA, top: GA, top_idx: GA, rows: int, ld: int,
           n: tl.ConstExpr[int], k: tl.ConstExpr[int]):
    t = tl.load(tl.tensor(x, [rows, n], strides=[ld, 2]), [2, n], offsets=[tl.block_idx() * 2, 0])
    r = tl.block_idx() * 2
    tl.store(tl.sort(t), tl.tensor(vals, [rows, n]), offsets=[r, 0])
    tl.store(tl.argsort(t, descending=True), tl.tensor(idx, [rows, n]), offsets=[r, 0])
    v, i = tl.topk(t, k, largest=False)
    tl.store(v, tl.tensor(top, [rows, k]), offsets=[r, 0])
    tl.store(i, tl.tensor(top_idx, [rows, k]), offsets=[r, 0])


# covers: sort argsort topk
@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_sort_argsort_topk_rows_with_ties_and_nan(backend):
    rows, n, k = 6, 257 if backend == "cpu" else 37, 5
    rng = np.random.default_rng(7)
    # Every exponent (all radix digits differ), ties, NaN, +-inf and both zeros.
    data = rng.standard_normal((rows, n)) * np.exp2(rng.integers(-40, 40, (rows, n)))
    data[:, ::7] = np.round(data[:, ::7])
    data[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
    x = np.full((rows, 2 * n), np.nan, np.float32)  # columns at stride 2
    x[:, ::2] = data
    xs = x[:, ::2].astype(np.float64)
    vals, idx = np.full((rows, n), np.nan, np.float32), np.full((rows, n), -7, np.int32)
    top, top_idx = np.full((rows, k), np.nan, np.float32), np.full((rows, k), -7, np.int32)
    tl.jit(backend=backend)(_sorts)[rows // 2](x, vals, idx, top, top_idx, rows, 2 * n, n, k)
    for r in range(rows):
        up, down = _order(xs[r], False), _order(xs[r], True)
        assert up == np.argsort(xs[r], kind="stable").tolist()  # numpy agrees on the rule
        np.testing.assert_array_equal(vals[r], xs[r][up].astype(np.float32))
        assert idx[r].tolist() == down
        np.testing.assert_array_equal(top[r], xs[r][up[:k]].astype(np.float32))
        assert top_idx[r].tolist() == up[:k]


def _bitcast_codes(codes: GA, values: GA, back: GA, fmt: tl.ConstExpr[str]):
    c = tl.load(tl.tensor(codes, [256]), [256], offsets=[0])
    v = c.bitcast(getattr(tl, fmt))
    tl.store(v.to(tl.float32), tl.tensor(values, [256]), offsets=[0])
    tl.store(v.bitcast(tl.uint8), tl.tensor(back, [256]), offsets=[0])


# covers: bitcast
@pytest.mark.parametrize("backend", ["interp", "cpu"])
@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2", "hifloat8"])
def test_bitcast_between_codes_and_8bit_floats(backend, fmt):
    import torch
    from tileops import ops
    codes = np.arange(256, dtype=np.uint8)
    want = ops.cast(torch.from_numpy(codes.copy()), torch.empty(256), input_dtype=fmt).numpy()
    values, back = np.full(256, 7.0, np.float32), np.zeros(256, np.uint8)
    tl.jit(backend=backend)(_bitcast_codes)[1](codes, values, back, fmt)
    np.testing.assert_array_equal(values, want)  # NaN where the code is NaN
    nan = np.isnan(want)
    assert back[~nan].tolist() == codes[~nan].tolist()
    back_values = ops.cast(torch.from_numpy(back.copy()), torch.empty(256), input_dtype=fmt)
    assert np.isnan(back_values.numpy()[nan]).all()


def _bad_topk(x: GA, k: tl.ConstExpr[int]):
    t = tl.load(tl.tensor(x, [4, 8]), [4, 8], offsets=[0, 0])
    tl.topk(t, k)


def _bool_sort(x: GA):
    t = tl.load(tl.tensor(x, [4, 8]), [4, 8], offsets=[0, 0])
    tl.sort(t > 0)


# covers: topk sort
def test_sort_and_topk_refuse_bad_arguments():
    x = np.zeros((4, 8), np.float32)
    for k in (0, 9):
        with pytest.raises(ValueError, match=r"'topk': k must be in \[1, 8\]"):
            tl.jit(backend="interp")(_bad_topk)[1](x, k)
    with pytest.raises(TypeError, match="needs a number dtype, got bool"):
        tl.jit(backend="interp")(_bool_sort)[1](x)
