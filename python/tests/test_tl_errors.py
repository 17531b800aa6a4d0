"""Trace-time errors of Python kernels: each names the construct and the kernel's Python line
(this file, the line carrying the `# line: <tag>` comment), and nothing is written."""

import pathlib

import numpy as np
import pytest

from tileops import tl

SOURCE = pathlib.Path(__file__).read_text().splitlines()


def line_of(tag):
    """The line number of the line ending with `# line: tag`."""
    hits = [i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(f"# line: {tag}")]
    assert len(hits) == 1, tag
    return hits[0]


def expect_error(kernel, tag, construct, words, exc=ValueError, args=None):
    """Launching `kernel` raises `exc` naming this file's line `tag`, the construct and words;
    the output (first argument) stays untouched."""
    out = np.full(16, np.nan, np.float32)
    with pytest.raises(exc) as info:
        kernel[2](*(args if args is not None else (out, 16)))
    message = str(info.value)
    assert f"test_tl_errors.py:{line_of(tag)}:" in message, message
    assert f"'{construct}'" in message, message
    for w in words:
        assert w in message, message
    assert np.isnan(out).all()


@tl.jit
def shape_mismatch(x: tl.GlobalAddress, n: int):
    t = tl.tensor(x, [n])
    a, b = tl.load(t, [8], offsets=[0]), tl.load(t, [4], offsets=[0])
    tl.store(a + b, t, offsets=[0])  # line: add


@tl.jit
def non_static_shape(x: tl.GlobalAddress, n: int):
    t = tl.tensor(x, [n])
    tl.store(tl.load(t, [n], offsets=[0]), t, offsets=[0])  # line: load


@tl.jit
def store_dtype_mismatch(x: tl.GlobalAddress, n: int):
    t = tl.tensor(x, [n])
    tl.store(tl.zeros([4], tl.float16), t, offsets=[0])  # line: store


@tl.jit
def parallel_carries(x: tl.GlobalAddress, n: int):
    acc = tl.Var(tl.zeros([4], tl.float32))
    for i in tl.range(0, n, parallel=True):  # line: parallel
        acc += 1.0
    tl.store(acc, tl.tensor(x, [n]), offsets=[0])


@tl.jit
def var_changes_shape(x: tl.GlobalAddress, n: int):
    acc = tl.Var(tl.zeros([4], tl.float32))
    for i in tl.range(n):  # line: var-shape
        acc.set(tl.zeros([8], tl.float32))
    tl.store(acc, tl.tensor(x, [n]), offsets=[0])


@tl.jit
def python_if_on_value(x: tl.GlobalAddress, n: int):
    # `if n > 4:` is a runtime branch; an assert has no IR form.
    assert n > 4  # line: python-if
    tl.store(1.0, tl.tensor(x, [n]), offsets=[0])


@tl.jit
def uses_break(x: tl.GlobalAddress, n: int):
    for i in tl.range(n):
        tl.store(1.0, tl.tensor(x, [n]), offsets=[i])
        break  # line: break


@tl.jit
def uses_continue(x: tl.GlobalAddress, n: int):
    for i in tl.range(n):
        continue  # line: continue


@tl.jit
def uses_return_in_loop(x: tl.GlobalAddress, n: int):
    for i in tl.range(n):
        return  # line: return


@tl.jit
def uses_try(x: tl.GlobalAddress, n: int):
    try:  # line: try
        tl.store(1.0, tl.tensor(x, [n]), offsets=[0])
    finally:
        pass


@tl.jit
def uses_print(x: tl.GlobalAddress, n: int):
    print(n)  # line: print


@tl.jit
def uses_yield(x: tl.GlobalAddress, n: int):
    yield n  # line: yield


@tl.jit
def static_range_of_value(x: tl.GlobalAddress, n: int):
    for i in tl.static_range(n):  # line: static_range
        tl.store(1.0, tl.tensor(x, [n]), offsets=[i])


@tl.jit
def loop_value_used_outside(x: tl.GlobalAddress, n: int):
    for i in tl.range(n):  # line: out-of-scope
        acc = tl.zeros([4], tl.float32) + 1.0  # no value before the loop: none after it
    tl.store(acc, tl.tensor(x, [n]), offsets=[0])


@tl.jit
def bad_operand(x: tl.GlobalAddress, n: int):
    tl.store(tl.zeros([4], tl.float32) + "one", tl.tensor(x, [n]), offsets=[0])  # line: operand


@tl.jit
def load_without_offsets(x: tl.GlobalAddress, n: int):
    tl.store(tl.load(tl.tensor(x, [n]), [4]), tl.tensor(x, [n]), offsets=[0])  # line: offsets


@tl.jit
def runtime_zero_step(x: tl.GlobalAddress, n: int):
    t = tl.tensor(x, [n])
    for i in tl.range(0, n, n - 16):  # line: zero-step
        tl.store(tl.load(t, [4], offsets=[i]) + 1.0, t, offsets=[i])


@tl.jit
def runtime_eps(x: tl.GlobalAddress, n: int, eps: float):
    t = tl.load(tl.tensor(x, [1, n]), [1, 4], offsets=[0, 0])
    y = tl.rms_norm(t, tl.load(tl.tensor(x, [n]), [4], offsets=[0]), eps)  # line: runtime-eps
    tl.store(y, tl.tensor(x, [1, n]), offsets=[0, 0])


# covers: trace_errors
@pytest.mark.parametrize("kernel,tag,construct,words,exc", [
    (shape_mismatch, "add", "add", ["shape mismatch"], ValueError),
    (non_static_shape, "load", "load", ["non-static shape"], ValueError),
    (store_dtype_mismatch, "store", "store", ["float16"], TypeError),
    (parallel_carries, "parallel", "range", ["parallel"], ValueError),
    (var_changes_shape, "var-shape", "range", ["carried", "tile<8xf32>"], TypeError),
    (python_if_on_value, "python-if", "bool", ["tl.if_"], ValueError),
    (uses_break, "break", "break", ["tl.range"], ValueError),
    (uses_continue, "continue", "continue", ["tl.range"], ValueError),
    (uses_return_in_loop, "return", "return", ["tl.range"], ValueError),
    (uses_try, "try", "try", ["exceptions"], ValueError),
    (uses_print, "print", "print", ["host I/O"], ValueError),
    (uses_yield, "yield", "yield", ["generators"], ValueError),
    (static_range_of_value, "static_range", "static_range", ["tl.range"], TypeError),
    (loop_value_used_outside, "out-of-scope", "range", ["may run zero times"], ValueError),
    (bad_operand, "operand", "add", ["str"], TypeError),
    (load_without_offsets, "offsets", "load", ["offsets="], ValueError),
    # A step known only at run time: checked as the loop starts, 0 raises as Python's range.
    (runtime_zero_step, "zero-step", "range", ["step must not be 0"], ValueError),
])
def test_trace_error_names_construct_and_line(kernel, tag, construct, words, exc):
    expect_error(kernel, tag, construct, words, exc)


def test_runtime_scalar_as_a_trace_time_number():
    out = np.full(16, np.nan, np.float32)
    expect_error(runtime_eps, "runtime-eps", "rms_norm", ["eps", "known when tracing"], TypeError,
                 args=(out, 16, 1e-6))


def test_error_in_a_helper_points_at_the_helpers_caller_line():
    def helper(t):
        return tl.load(t, [8], offsets=[0]) * tl.load(t, [4], offsets=[0])  # line: helper

    @tl.jit
    def kernel(x: tl.GlobalAddress, n: int):
        t = tl.tensor(x, [n])
        tl.store(helper(t), t, offsets=[0])

    expect_error(kernel, "helper", "mul", ["shape mismatch"])


def test_a_failed_trace_leaves_no_state_behind():
    # The loop of `uses_break` stays open when its trace fails; the next trace on this thread
    # (same kernel body shape, a good kernel) must not see it.
    @tl.jit
    def good(x: tl.GlobalAddress, n: int):
        for i in tl.range(n):
            tl.store(2.0, tl.tensor(x, [n]), offsets=[i])

    with pytest.raises(ValueError):
        shape_mismatch[1](np.zeros(16, np.float32), 16)
    out = np.zeros(16, np.float32)
    good[1](out, 16)
    assert (out == 2.0).all()


def test_tl_call_outside_a_kernel():
    with pytest.raises(ValueError, match="outside a kernel being traced"):
        tl.block_idx()


def test_kernel_returning_a_value():
    @tl.jit
    def returns(x: tl.GlobalAddress, n: int):
        return tl.load(tl.tensor(x, [n]), [4], offsets=[0])

    with pytest.raises(TypeError, match="returns nothing"):
        returns[1](np.zeros(4, np.float32), 4)


def test_launched_kernels_need_annotations():
    @tl.jit
    def unannotated(x: tl.GlobalAddress, n):
        pass

    @tl.jit
    def variadic(*xs: tl.GlobalAddress):
        pass

    with pytest.raises(TypeError, match="parameter 'n'"):
        unannotated[1](np.zeros(4, np.float32), 4)
    with pytest.raises(TypeError, match=r"\*args"):
        variadic[1](np.zeros(4, np.float32))


def test_bad_launch_arguments():
    @tl.jit
    def k(x: tl.GlobalAddress, n: int, tile: tl.ConstExpr[int]):
        tl.store(1.0, tl.tensor(x, [n]), offsets=[0])

    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="expected an int, got float"):
        k[1](x, 2.5, 4)
    with pytest.raises(TypeError, match="argument 'x'"):
        k[1]([1.0, 2.0], 4, 4)
    with pytest.raises(TypeError, match=r"ConstExpr\[int\]"):
        k[1](x, 4, 2.5)
    with pytest.raises(TypeError, match="missing a required argument"):
        k[1](x, 4)
    with pytest.raises(ValueError, match="core_num"):
        k[-1](x, 4, 4)
    with pytest.raises(ValueError, match="core_num"):
        k[2**64](x, 4, 4)
    with pytest.raises(ValueError, match="argument 'n': expected an int64"):
        k[1](x, 2**63, 4)

    @tl.jit
    def flagged(x: tl.GlobalAddress, n: int, flag: bool):
        tl.store(1.0, tl.tensor(x, [n]), offsets=[0])

    with pytest.raises(TypeError, match="argument 'flag': expected a bool, got int 1"):
        flagged[1](x, 4, 1)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        k[1](ro, 4, 4)
    with pytest.raises(ValueError, match="stream"):
        k[1, "cuda:0"](x, 4, 4)


def test_every_traced_op_records_the_kernels_line():
    @tl.jit(debug=True)
    def located(x: tl.GlobalAddress, n: int):
        t = tl.tensor(x, [n])  # line: loc-tensor
        v = tl.exp(tl.load(t, [4], offsets=[0]))  # line: loc-exp
        tl.store(v, t, offsets=[0])  # line: loc-store

    ir = located.ir(np.zeros(4, np.float32), 4)
    for tag, op in [("loc-tensor", "tensor"), ("loc-exp", "exp"), ("loc-store", "store")]:
        lines = [text for text in ir.splitlines() if f" {op} " in f" {text} "]
        assert lines and all(f"test_tl_errors.py:{line_of(tag)}" in text for text in lines), ir


def _loop_with_break(t, n):
    for i in tl.range(n):  # line: helper-range
        tl.store(1.0, t, offsets=[i])
        break  # a helper's source is not checked: the open loop is caught while tracing


def test_break_outside_the_checked_source_is_caught_while_tracing():
    @tl.jit
    def kernel(x: tl.GlobalAddress, n: int):
        _loop_with_break(tl.tensor(x, [n]), n)

    expect_error(kernel, "helper-range", "range", ["left early"])


def huge_zeros(x: tl.GlobalAddress, n: int):
    z = tl.zeros([2**32, 2**32], tl.float32)  # line: huge-zeros
    tl.store(z, tl.tensor(x, [n, n]), offsets=[0, 0])


def huge_broadcast(x: tl.GlobalAddress, n: int):
    a, b = tl.zeros([2**32, 1], tl.float32), tl.zeros([1, 2**32], tl.float32)
    tl.store(a + b, tl.tensor(x, [n, n]), offsets=[0, 0])  # line: huge-broadcast


def huge_reshape(x: tl.GlobalAddress, n: int):
    t = tl.load(tl.tensor(x, [n]), [16], offsets=[0])
    r = tl.reshape(t, [2**32, 2**32, 16, 16])  # line: huge-reshape
    tl.store(r, tl.tensor(x, [n]), offsets=[0])


def huge_tensor(x: tl.GlobalAddress, n: int, rows: int, s0: int):
    t = tl.tensor(x, [rows, n], strides=[s0, 1])  # line: huge-tensor
    tl.store(tl.load(t, [1, 16], offsets=[0, 0]) + 1.0, t, offsets=[0, 0])


# covers: trace_errors
@pytest.mark.parametrize("backend", ["interp", "cpu"])
@pytest.mark.parametrize("fn,tag,construct", [
    (huge_zeros, "huge-zeros", "full"),
    (huge_broadcast, "huge-broadcast", "add"),
    (huge_reshape, "huge-reshape", "reshape"),
])
def test_tile_shapes_beyond_int64_are_trace_errors(backend, fn, tag, construct):
    expect_error(tl.jit(backend=backend)(fn), tag, construct, ["tile shape", "overflows int64"])


# A tl.tensor whose extents and strides reach beyond int64 bytes is refused at launch.
@pytest.mark.parametrize("backend", ["interp", "cpu"])
@pytest.mark.parametrize("rows,s0", [(2**32, 2**32), (2**61, 16), (2, -2**63)])
def test_tensor_geometry_beyond_int64(backend, rows, s0):
    out = np.full(16, np.nan, np.float32)
    expect_error(tl.jit(backend=backend)(huge_tensor), "huge-tensor", "tensor",
                 ["beyond int64 bytes"], args=(out, 16, rows, s0))


def huge_but_countable(x: tl.GlobalAddress, n: int):
    z = tl.zeros([2**29, 2**30], tl.float32)  # within int64 bytes, beyond any memory
    tl.store(z, tl.tensor(x, [n, n]), offsets=[0, 0])


# A tile whose size is countable but beyond memory is an error of its own, not std::bad_alloc.
@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_tile_beyond_memory_is_a_clear_error(backend):
    out = np.full(16, np.nan, np.float32)
    with pytest.raises((MemoryError, ValueError)) as info:
        tl.jit(backend=backend)(huge_but_countable)[1](out, 4)
    assert "memory" in str(info.value) or "stack" in str(info.value), str(info.value)
    assert np.isnan(out).all()
