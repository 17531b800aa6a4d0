"""The asc2 tile surface of tileops.tl (issue #36, section 2): tile methods and varargs forms of
the shape and reduction functions, keyword-only keep_dims, layer_norm's (out, mean, rstd), the
per-trace integer division mode, TileLocation on loads, numpy scalars as numbers and trace errors
deriving from RuntimeError. Numbers are checked against numpy on the interp and cpu backends."""

import pathlib
import threading

import numpy as np
import pytest

from tileops import _C, asc2, tl
from tl_support import check

BACKENDS = ["interp", "cpu"]
GA = tl.GlobalAddress
TileLocation = tl.TileLocation
TraceError, TraceTypeError = tl.TraceError, tl.TraceTypeError
SOURCE = pathlib.Path(__file__).read_text().splitlines()


def line_of(tag):
    """The line number of the line ending with `# line: tag`."""
    hits = [i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(f"# line: {tag}")]
    assert len(hits) == 1, tag
    return hits[0]


def jit(fn, backend):
    return tl.jit(backend=backend)(fn)


# --- 1, 2: tile methods, varargs forms, keyword-only keep_dims ----------------------------------

SEGMENTS = []  # (name, numpy reference of x [4, 8]) in the order the kernel stores them


def _seg(name, ref):
    SEGMENTS.append((name, ref))


_seg("x.sum(1)", lambda x: x.sum(1))
_seg("x.max(0)", lambda x: x.max(0))
_seg("x.min([1])", lambda x: x.min(1))
_seg("x.mean(axis=1, keep_dims=True)", lambda x: x.mean(1))
_seg("x.prod(0)", lambda x: x.prod(0))
_seg("x.sum()", lambda x: np.array([x.sum()]))
_seg("x.sum(0, 1)", lambda x: np.array([x.sum()]))
_seg("tl.reduce_max(x, 0, 1)", lambda x: np.array([x.max()]))
_seg("x.min(None)", lambda x: np.array([x.min()]))
_seg("tl.reduce_sum(x3, 1, 2)", lambda x: x.reshape(2, 4, 4).sum((1, 2)))
_seg("tl.reduce_mean(x3, (0, 2))", lambda x: x.reshape(2, 4, 4).mean((0, 2)))
_seg("x.transpose(1, 0)", lambda x: x.T.ravel())
_seg("tl.transpose(x, [1, 0])", lambda x: x.T.ravel())
_seg("tl.transpose(x)", lambda x: x.T.ravel())
_seg("tl.reshape(x, 8, 4).transpose()", lambda x: x.reshape(8, 4).T.ravel())
_seg("x3.transpose(2, 0, 1)", lambda x: x.reshape(2, 4, 4).transpose(2, 0, 1).ravel())
_seg("tl.transpose(x3, 1, 2, 0)", lambda x: x.reshape(2, 4, 4).transpose(1, 2, 0).ravel())
_seg("tl.broadcast_to(x.sum(0), 4, 8)", lambda x: np.broadcast_to(x.sum(0), (4, 8)).ravel())
_seg("tl.broadcast_to(x[:, :1], [4, 8])", lambda x: np.broadcast_to(x[:, :1], (4, 8)).ravel())
_seg("tl.broadcast_to(x.max(), 2, 3)", lambda x: np.full(6, x.max()))
_seg("tl.argmax(x, 1, keep_dims=True)", lambda x: x.argmax(1).astype(np.float64))
_seg("tl.argmin(x, dim=0)", lambda x: x.argmin(0).astype(np.float64))


def _surface_values(x):
    x3 = tl.reshape(x, 2, 4, 4)
    return [
        x.sum(1), x.max(0), x.min([1]), x.mean(axis=1, keep_dims=True), x.prod(0), x.sum(),
        x.sum(0, 1), tl.reduce_max(x, 0, 1), x.min(None), tl.reduce_sum(x3, 1, 2),
        tl.reduce_mean(x3, (0, 2)), x.transpose(1, 0), tl.transpose(x, [1, 0]), tl.transpose(x),
        tl.reshape(x, 8, 4).transpose(), x3.transpose(2, 0, 1), tl.transpose(x3, 1, 2, 0),
        tl.broadcast_to(x.sum(0), 4, 8), tl.broadcast_to(tl.copy(x, [4, 1], [0, 0]), [4, 8]),
        tl.broadcast_to(x.max(), 2, 3), tl.argmax(x, 1, keep_dims=True).to(tl.float32),
        tl.argmin(x, dim=0).to(tl.float32),
    ]


RESULT_SHAPES = []


def surface(x: GA, out: GA, n: int):
    tx, to = tl.tensor(x, [4, 8]), tl.tensor(out, [n])
    v = tl.load(tx, [4, 8], offsets=[0, 0])
    offset = 0
    RESULT_SHAPES.clear()
    for r in _surface_values(v):
        RESULT_SHAPES.append(r.shape)
        flat = r.reshape(r.size) if r.is_tile else tl.broadcast_to(r, [1])  # varargs reshape
        tl.store(flat, to, offsets=[offset])
        offset += r.size


# covers: reduce_sum reduce_max reduce_min reduce_mean reduce_prod argmax argmin keep_dims
# covers: transpose reshape broadcast_to tile_methods
@pytest.mark.parametrize("backend", BACKENDS)
def test_tile_methods_and_varargs_forms_match_numpy(backend):
    x = np.random.default_rng(3).uniform(0.5, 1.5, (4, 8)).astype(np.float32)
    x[1, 3] = 2.0  # one clear maximum
    refs = [ref(x.astype(np.float64)) for _, ref in SEGMENTS]
    out = np.full(sum(r.size for r in refs), np.nan, np.float32)
    jit(surface, backend)[1](x, out, out.size)
    assert RESULT_SHAPES[:4] == [(4,), (8,), (4,), (4, 1)]
    assert RESULT_SHAPES[5] == RESULT_SHAPES[6] == ()  # everything: a scalar
    assert RESULT_SHAPES[9] == (2,) and RESULT_SHAPES[10] == (4,)  # 2 and 1/2 never keep_dims
    assert RESULT_SHAPES[-2:] == [(4, 1), (8,)]
    offset = 0
    for (name, _), ref in zip(SEGMENTS, refs):
        got = out[offset:offset + ref.size]
        offset += ref.size
        try:
            check(got, ref.ravel(), "float32")
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None


def _positional_bool(x: GA, form: tl.ConstExpr[str]):
    v = tl.load(tl.tensor(x, [4, 8]), [4, 8], offsets=[0, 0])
    if form == "reduce_sum":
        tl.reduce_sum(v, 1, True)  # line: bool-reduce
    elif form == "method":
        v.max(0, np.True_)  # line: bool-method
    elif form == "argmax":
        tl.argmax(v, True)  # line: bool-argmax
    elif form == "transpose":
        tl.transpose(v, True, 0)  # line: bool-transpose
    elif form == "twice":
        tl.reduce_sum(v, 1, dims=0)  # line: twice
    elif form == "both":
        v.sum(dims=0, axis=1)  # line: both


# covers: keep_dims trace_errors
@pytest.mark.parametrize("form,tag,exc,words", [
    ("reduce_sum", "bool-reduce", TypeError, ["keep_dims is keyword-only", "got bool True"]),
    ("method", "bool-method", TypeError, ["keep_dims is keyword-only", "got bool"]),
    ("argmax", "bool-argmax", TypeError, ["dim must be an int, got bool"]),
    ("transpose", "bool-transpose", TypeError, ["axis argument 1", "got bool"]),
    ("twice", "twice", ValueError, ["give dims once"]),
    ("both", "both", ValueError, ["dims= or axis=, not both"]),
])
def test_positional_bool_is_never_keep_dims(form, tag, exc, words):
    with pytest.raises(exc) as info:
        jit(_positional_bool, "interp")[1](np.zeros((4, 8), np.float32), form)
    message = str(info.value)
    assert f"test_tl_surface.py:{line_of(tag)}:" in message, message
    for w in words:
        assert w in message, message


def test_keep_dims_cannot_be_given_positionally_to_argmax():
    def kernel(x: GA):
        v = tl.load(tl.tensor(x, [4, 8]), [4, 8], offsets=[0, 0])
        tl.argmin(v, 1, True)  # line: argmin-positional

    with pytest.raises(TraceTypeError) as info:
        jit(kernel, "interp")[1](np.zeros((4, 8), np.float32))
    message = str(info.value)
    assert f"test_tl_surface.py:{line_of('argmin-positional')}:" in message, message
    assert "keep_dims is keyword-only" in message, message


# --- 3: layer_norm --------------------------------------------------------------------------

LN_SHAPES = []


def layer_norm_forms(x: GA, g: GA, b: GA, y: GA, stats: GA, scalars: GA, rows: tl.ConstExpr[int],
                     width: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [rows, width]), tl.tensor(y, [rows, width])
    ts, tsc = tl.tensor(stats, [4, rows]), tl.tensor(scalars, [2])
    v = tl.load(tx, [rows, width], offsets=[0, 0])
    gamma = tl.load(tl.tensor(g, [width]), [width], offsets=[0])
    beta = tl.load(tl.tensor(b, [width]), [width], offsets=[0])
    out, mean, rstd = tl.layer_norm(v, gamma, beta, 1e-5)
    _, mean_k, rstd_k = tl.layer_norm(v, gamma, beta, eps=1e-5, keep_dims=True)
    alone = tl.layer_norm(v, gamma, beta, 1e-5, return_stats=False)
    _, row_mean, row_rstd = tl.layer_norm(tl.reshape(tl.copy(v, [1, width], [0, 0]), width),
                                          gamma, beta)
    LN_SHAPES[:] = [out.shape, mean.shape, rstd.shape, mean_k.shape, alone.shape,
                    row_mean.shape, mean.dtype]
    tl.store(((out + alone) * 0.5).to(v.dtype), ty, offsets=[0, 0])
    tl.store(tl.reshape(mean, 1, rows), ts, offsets=[0, 0])
    tl.store(tl.reshape(rstd, 1, rows), ts, offsets=[1, 0])
    tl.store(tl.reshape(mean_k, 1, rows), ts, offsets=[2, 0])
    tl.store(tl.reshape(rstd_k, 1, rows), ts, offsets=[3, 0])
    tl.store(row_mean, tsc, offsets=[0])
    tl.store(row_rstd, tsc, offsets=[1])


# covers: layer_norm
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_layer_norm_returns_out_mean_rstd_as_asc2(backend, dtype):
    rows, width = 5, 40
    rng = np.random.default_rng(11)
    x = rng.uniform(-2, 3, (rows, width)).astype(dtype)
    g, b = rng.uniform(0.5, 1.5, width).astype(dtype), rng.uniform(-1, 1, width).astype(dtype)
    y = np.full((rows, width), np.nan, dtype)
    stats = np.full((4, rows), np.nan, np.float32)
    scalars = np.full(2, np.nan, np.float32)
    jit(layer_norm_forms, backend)[1](x, g, b, y, stats, scalars, rows, width)
    assert LN_SHAPES == [(rows, width), (rows,), (rows,), (rows, 1), (rows, width), (),
                         tl.float32]
    xs = x.astype(np.float64)
    mean = xs.mean(axis=1)
    rstd = 1 / np.sqrt(((xs - mean[:, None]) ** 2).mean(axis=1) + 1e-5)
    out = (xs - mean[:, None]) * rstd[:, None] * g.astype(np.float64) + b.astype(np.float64)
    check(y, out, dtype)
    check(stats, np.stack([mean, rstd, mean, rstd]), "float32")
    check(scalars, np.array([mean[0], rstd[0]]), "float32")


# --- 4: integer division ----------------------------------------------------------------------


def int_division(a: GA, b: GA, out: GA, n: int, s: int):
    ta, tb, to = tl.tensor(a, [n]), tl.tensor(b, [n]), tl.tensor(out, [4, n])
    x, y = tl.load(ta, [16], offsets=[0]), tl.load(tb, [16], offsets=[0])
    for k, r in enumerate([x / y, x / 3, -7 / y, x / s]):  # tile-tile, tile-int, int-tile, scalar
        tl.store(tl.expand_dims(r.to(tl.float64), 0), to, offsets=[k, 0])


def _int_division_inputs():
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, 16).astype(np.int32)
    b = rng.integers(-9, 9, 16).astype(np.int32)
    a[:4], b[:4] = [7, -7, 7, -7], [2, 2, -2, -2]  # every sign pair, inexact
    b[4] = 0  # a zero divisor gives 0 in trunc mode
    return a, b


def _c_division(a, b):
    """C's integer division: truncated toward zero; 0 for a zero divisor (as the tl floordiv)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    q = np.zeros(a.shape, np.int64)
    nz = b != 0
    q[nz] = np.trunc(a[nz] / b[nz]).astype(np.int64)
    return q.astype(np.float64)


# covers: div int_division
@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_division_truncates_in_asc2_mode_only(backend):
    a, b = _int_division_inputs()
    out = np.full((4, 16), np.nan)
    asc2.jit(backend=backend)(int_division)[1](a, b, out, 16, -3)  # traced in "trunc" mode
    assert _C.tl._set_int_division("default") == "default"  # and the mode is restored
    check(out, np.stack([_c_division(a, b), _c_division(a, 3), _c_division(-7, b),
                         _c_division(a, -3)]), "float64")

    # The default mode keeps true division (float32), as tileops.tl always had.
    out = np.full((4, 16), np.nan)
    b_nz = np.where(b == 0, 1, b).astype(np.int32)
    jit(int_division, backend)[1](a, b_nz, out, 16, -3)
    f = a.astype(np.float64)
    ref = np.stack([f / b_nz, f / 3, -7 / b_nz.astype(np.float64), f / -3])
    check(out, ref.astype(np.float32).astype(np.float64), "float32")


def test_int_division_mode_is_per_thread_and_validated():
    seen = []
    previous = _C.tl._set_int_division("trunc")
    try:
        thread = threading.Thread(target=lambda: seen.append(_C.tl._set_int_division("default")))
        thread.start()
        thread.join()
        assert seen == ["default"]  # another thread keeps its own mode
        assert _C.tl._set_int_division("trunc") == "trunc"
    finally:
        _C.tl._set_int_division(previous)
    with pytest.raises(ValueError, match="mode"):
        _C.tl._set_int_division("floor")


def test_trunc_mode_changes_integer_division_only():
    def kernel(x: GA, out: GA):
        v = tl.load(tl.tensor(x, [8]), [8], offsets=[0])
        w = tl.full([8], 7, tl.int32) / -2  # -3 (truncated), not floor's -4
        tl.store(v / 2 + w.to(tl.float32), tl.tensor(out, [8]), offsets=[0])

    x = np.arange(8, dtype=np.float32)
    out = np.full(8, np.nan, np.float32)
    asc2.jit(backend="interp")(kernel)[1](x, out)
    check(out, x / 2.0 - 3.0, "float32")


# --- 5: TileLocation ------------------------------------------------------------------------


def located_matmul(a: GA, b: GA, c: GA, bias: GA, out: GA):
    ta, tb, tc = tl.tensor(a, [8, 16]), tl.tensor(b, [8, 16]), tl.tensor(c, [8, 8])
    tout = tl.tensor(out, [2, 8, 8])
    x = tl.load(ta, [8, 16], offsets=[0, 0], location=TileLocation.L0A)
    w = tl.load(tb, [8, 16], offsets=[0, 0], location=TileLocation.L0B)  # [N, K]: fed as w.T
    acc = tl.load(tc, [8, 8], offsets=[0, 0], location=TileLocation.L0C)
    bt = tl.load(tl.tensor(bias, [8]), [8], offsets=[0], location=TileLocation.BT)
    u = tl.load(tc, [8, 8], offsets=[0, 0], location=TileLocation.UB)
    tl.store(tl.expand_dims(tl.matmul_acc(acc, x, w.T) + u, 0), tout, offsets=[0, 0, 0])
    tl.store(tl.expand_dims(tl.matmul(x, w.T, bias=bt), 0), tout, offsets=[1, 0, 0])


# covers: load matmul matmul_acc matmul_bias tile_location
@pytest.mark.parametrize("backend", BACKENDS)
def test_tile_locations_are_recorded_and_change_no_result(backend):
    rng = np.random.default_rng(9)
    a, b = rng.uniform(-1, 1, (8, 16)).astype(np.float32), rng.uniform(-1, 1, (8, 16)).astype(
        np.float32)
    c, bias = rng.uniform(-1, 1, (8, 8)).astype(np.float32), rng.uniform(-1, 1, 8).astype(
        np.float32)
    out = np.full((2, 8, 8), np.nan, np.float32)
    k = jit(located_matmul, backend)
    k[1](a, b, c, bias, out)
    ab = a.astype(np.float64) @ b.astype(np.float64).T
    check(out[0], ab + 2 * c, "float32")
    check(out[1], ab + bias, "float32")
    ir = k.ir(a, b, c, bias, out)
    for name in ("L0A", "L0B", "L0C", "BT", "UB"):
        assert f"location={name}" in ir, ir
    assert [m.name for m in TileLocation.__members__.values()] == [
        "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"]


def _misplaced(a: GA, out: GA, case: tl.ConstExpr[str]):
    ta, to = tl.tensor(a, [8, 8]), tl.tensor(out, [8, 8])
    if case == "l0a-right":
        x = tl.load(ta, [8, 8], offsets=[0, 0], location=TileLocation.L0A)
        y = tl.load(ta, [8, 8], offsets=[0, 0])
        tl.store(y @ x, to, offsets=[0, 0])  # line: l0a-right
    elif case == "l0b-vector":
        x = tl.load(ta, [8, 8], offsets=[0, 0], location=TileLocation.L0B)
        tl.store(x.to(tl.float32) + 1, to, offsets=[0, 0])  # line: l0b-vector
    elif case == "l0c-operand":
        x = tl.load(ta, [8, 8], offsets=[0, 0], location=TileLocation.L0C)
        tl.store(x @ x, to, offsets=[0, 0])  # line: l0c-operand
    elif case == "bt-acc":
        x = tl.load(ta, [8, 8], offsets=[0, 0], location=TileLocation.BT)
        y = tl.load(ta, [8, 8], offsets=[0, 0])
        tl.store(tl.matmul_acc(x, y, y), to, offsets=[0, 0])  # line: bt-acc
    elif case == "not-enum":
        tl.load(ta, [8, 8], offsets=[0, 0], location="L0A")  # line: not-enum


# covers: load trace_errors tile_location
@pytest.mark.parametrize("case,exc,words", [
    ("l0a-right", ValueError, ["TileLocation.L0A", "the right operand of a matmul",
                               "only the left operand"]),
    ("l0b-vector", ValueError, ["TileLocation.L0B", "operand 1 of 'add'"]),
    ("l0c-operand", ValueError, ["TileLocation.L0C", "the left operand of a matmul"]),
    ("bt-acc", ValueError, ["TileLocation.BT", "the accumulator of matmul_acc"]),
    ("not-enum", TypeError, ["location must be a tl.TileLocation"]),
])
def test_misplaced_tiles_are_trace_errors_naming_the_line(case, exc, words):
    out = np.full((8, 8), np.nan, np.float32)
    with pytest.raises(exc) as info:
        jit(_misplaced, "interp")[1](np.ones((8, 8), np.float32), out, case)
    message = str(info.value)
    assert f"test_tl_surface.py:{line_of(case)}:" in message, message
    for w in words:
        assert w in message, message
    assert isinstance(info.value, RuntimeError)
    assert np.isnan(out).all()


# --- 6: numpy scalars -----------------------------------------------------------------------


def numpy_numbers(x: GA, out: GA):
    tx, to = tl.tensor(x, [np.int64(4), np.int32(8)]), tl.tensor(out, [8, 4, 8])
    v = tl.load(tx, [np.int64(4), np.int32(8)], offsets=[np.int64(0), np.int32(0)])
    rows = [v + np.float32(1.5), np.float64(2.0) * v, v * np.int32(3),
            tl.maximum(v, np.float32(0)), tl.where(v > np.float16(0), v, np.float64(-1)),
            tl.broadcast_to(v.sum(np.int64(1), keep_dims=True), np.int64(4), np.int32(8)) +
            tl.full([np.int64(4), 8], np.float32(0.5), tl.float32),
            tl.concat([tl.copy(v, [2, 8], [np.int64(0), 0]), tl.copy(v, [2, 8], [2, np.int32(0)])],
                      np.int64(0)) + tl.arange(np.int64(8), tl.int32).to(tl.float32),
            tl.where(tl.logical_and(v > 0, np.True_), v, np.float64(0))]  # a bool, not 1
    for k, r in enumerate(rows):
        tl.store(tl.expand_dims(r, np.int64(0)), to, offsets=[np.int64(k), 0, 0])


# covers: scalar_operands numpy_scalars
@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_scalars_work_as_python_numbers(backend):
    x = np.random.default_rng(2).uniform(-2, 2, (4, 8)).astype(np.float32)
    out = np.full((8, 4, 8), np.nan, np.float32)
    jit(numpy_numbers, backend)[1](x, out)
    xs = x.astype(np.float64)
    check(out, np.stack([xs + 1.5, 2 * xs, 3 * xs, np.maximum(xs, 0), np.where(xs > 0, xs, -1),
                         np.broadcast_to(xs.sum(1, keepdims=True), (4, 8)) + 0.5,
                         xs + np.arange(8), np.where(xs > 0, xs, 0)]), "float32")


def test_host_ceildiv_of_numpy_ints_is_a_python_int():
    n = tl.ceildiv(np.prod((3, 100)), 256)
    assert n == 2 and type(n) is int
    m = tl.ceildiv(np.int32(-7), np.int64(2))
    assert m == -3 and type(m) is int
    assert tl.ceildiv(7, 2) == 4


# --- 7: trace errors ------------------------------------------------------------------------


def _bad_shapes(x: GA):
    t = tl.tensor(x, [8])
    a, b = tl.load(t, [8], offsets=[0]), tl.load(t, [4], offsets=[0])
    tl.store(a + b, t, offsets=[0])  # line: shapes


def _bad_type(x: GA):
    t = tl.tensor(x, [8])
    tl.store(tl.load(t, [8], offsets=[0]) << 1, t, offsets=[0])  # line: type


# covers: trace_errors ceildiv
def test_trace_errors_derive_from_runtime_error_and_name_the_line():
    assert issubclass(TraceError, ValueError) and issubclass(TraceError, RuntimeError)
    assert issubclass(TraceTypeError, TypeError) and issubclass(TraceTypeError, RuntimeError)
    x = np.zeros(8, np.float32)
    with pytest.raises(TraceError) as info:
        jit(_bad_shapes, "interp")[1](x)
    assert f"test_tl_surface.py:{line_of('shapes')}:" in str(info.value)
    with pytest.raises(TraceTypeError) as info:
        jit(_bad_type, "interp")[1](x)
    assert f"test_tl_surface.py:{line_of('type')}:" in str(info.value)
    # Outside a trace, a tl call is a trace error too (it names the calling line).
    with pytest.raises(RuntimeError) as info:
        tl.full([4], 1.0, tl.float32)  # line: outside
    assert f"test_tl_surface.py:{line_of('outside')}:" in str(info.value)
