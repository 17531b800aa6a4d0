"""The AST front-end of @tl.jit (tileops/_frontend.py): names rebound in tl.range bodies are
loop-carried, `if` on a traced scalar is a runtime branch, and nothing silently changes meaning.
Every kernel runs on both backends (interp, the reference, and cpu) against numpy."""

import numpy as np
import pytest

from tileops import tl

GA = tl.GlobalAddress
BACKENDS = ("interp", "cpu")


def on(backend, fn):
    return tl.jit(backend=backend)(fn)


def running_sum(x: GA, y: GA, n: int, tile: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [n * tile]), tl.tensor(y, [n * tile])
    acc = tl.full([tile], 0.0, dtype=tl.float32)
    for t in tl.range(n):
        acc = acc + tl.load(tx, [tile], offsets=[t * tile])  # asc2's loop idiom
        tl.store(acc, ty, offsets=[t * tile])


# covers: loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
def test_rebinding_in_a_loop_carries_the_running_sum(backend):
    n, tile = 7, 16
    x = np.random.default_rng(1).uniform(-1, 1, n * tile).astype(np.float32)
    y = np.full(n * tile, np.nan, np.float32)
    on(backend, running_sum)[1](x, y, n, tile)
    ref = np.cumsum(x.reshape(n, tile).astype(np.float64), axis=0).ravel()
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def offsets_advance(x: GA, y: GA, n: int, tile: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [n * tile]), tl.tensor(y, [n * tile])
    off = 0
    for _ in tl.range(n):
        tl.store(tl.load(tx, [tile], offsets=[off]) * 2.0, ty, offsets=[off])
        off = off + tile  # an offset carried from one iteration to the next


# covers: loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_offset_rebound_in_a_loop_walks_every_tile(backend):
    n, tile = 5, 8
    x = np.arange(n * tile, dtype=np.float32)
    y = np.full(n * tile, np.nan, np.float32)
    on(backend, offsets_advance)[1](x, y, n, tile)
    np.testing.assert_array_equal(y, 2 * x)


def fibonacci_like(y: GA, n: int):
    ty = tl.tensor(y, [2])
    a, b = 0.0, 1.0
    total = 0.0
    for _ in tl.range(n):
        a, b = b, a + b  # tuple assignment
        total += a  # augmented assignment
    tl.store(tl.full([2], 0.0, tl.float32) + tl.where(tl.arange(2) == 0, total, b), ty,
             offsets=[0])


# covers: loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 9])
def test_tuple_and_augmented_assignments_carry_after_the_loop(backend, n):
    y = np.full(2, np.nan, np.float32)
    on(backend, fibonacci_like)[1](y, n)
    a, b, total = 0.0, 1.0, 0.0
    for _ in range(n):
        a, b = b, a + b
        total += a
    np.testing.assert_array_equal(y, np.array([total, b], np.float32))


def nested_loops(x: GA, y: GA, rows: int, cols: int, tile: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [rows, cols * tile]), tl.tensor(y, [rows])
    for r in tl.range(tl.block_idx(), rows, tl.block_num()):
        best = tl.full([1, tile], -1e30, tl.float32)
        for c in tl.range(cols):
            tile_x = tl.load(tx, [1, tile], offsets=[r, c * tile])
            best = tl.maximum(best, tile_x)
        tl.store(tl.reduce_max(best, 1), ty, offsets=[r])


# covers: loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cores", [1, 3])
def test_nested_loops_carry_their_own_names(backend, cores):
    rows, cols, tile = 5, 3, 8
    x = np.random.default_rng(2).uniform(-5, 5, (rows, cols * tile)).astype(np.float32)
    y = np.full(rows, np.nan, np.float32)
    on(backend, nested_loops)[cores](x, y, rows, cols, tile)
    np.testing.assert_array_equal(y, x.max(axis=1))


def branchy(x: GA, y: GA, n: int, threshold: float, scale: tl.ConstExpr[float]):
    tx, ty = tl.tensor(x, [n * 8]), tl.tensor(y, [n * 8])
    for t in tl.range(n):
        v = tl.load(tx, [8], offsets=[t * 8])
        s = tl.reduce_sum(v)
        if s > threshold:  # a runtime branch on a traced scalar
            w = v * scale
        elif s < -threshold:
            w = -v
        else:
            w = v + 1.0
        if scale > 1.0:  # a trace-time branch on a ConstExpr
            w = w + 100.0
        tl.store(w, ty, offsets=[t * 8])


# covers: runtime_if if_trace_time
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_if_elif_else_on_traced_values_is_a_runtime_branch(backend, scale):
    n = 12
    x = np.random.default_rng(3).uniform(-1, 1, (n, 8)).astype(np.float32)
    x[::3] += 2.0
    x[1::4] -= 2.0
    y = np.full(n * 8, np.nan, np.float32)
    kernel = on(backend, branchy)
    kernel[1](x.ravel(), y, n, 1.5, scale)
    ref = []
    for row in x.astype(np.float64):
        s = row.astype(np.float32).sum()
        w = row * scale if s > 1.5 else (-row if s < -1.5 else row + 1.0)
        ref.append(w + (100.0 if scale > 1.0 else 0.0))
    np.testing.assert_allclose(y, np.ravel(ref), rtol=1e-6, atol=1e-6)
    assert kernel.ir(x.ravel(), y, n, 1.5, scale).count("if ") == 2  # if, elif: runtime


def defined_in_both_branches(y: GA, flag: int, a: float):
    ty = tl.tensor(y, [4])
    if flag > 0 and a > 0.0:  # `and` on traced scalars
        z = tl.full([4], a, tl.float32)
    else:
        z = tl.full([4], -1.0, tl.float32)
    scale = 2.0 if not flag > 5 else 3.0  # not, and a conditional expression on traced values
    tl.store(z * scale, ty, offsets=[0])


# covers: runtime_if bool_ops ifexp
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flag,a", [(1, 0.5), (0, 0.5), (1, -0.5), (7, 0.25)])
def test_a_name_first_assigned_in_both_branches_is_the_if_result(backend, flag, a):
    y = np.full(4, np.nan, np.float32)
    on(backend, defined_in_both_branches)[1](y, flag, a)
    z = a if flag > 0 and a > 0 else -1.0
    np.testing.assert_array_equal(y, np.full(4, z * (2.0 if not flag > 5 else 3.0), np.float32))


def carried_var_and_helpers(x: GA, y: GA, n: int, tile: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [n * tile]), tl.tensor(y, [tile])
    acc = tl.Var(tl.zeros([tile], tl.float32))  # the explicit form keeps working

    def scaled(v):  # a nested helper closing over a ConstExpr
        return v * float(tile)

    for t in tl.range(n):
        acc += scaled(tl.load(tx, [tile], offsets=[t * tile]))
    acc = acc + 1.0  # rebinding the Var's name after the loop: a plain value
    tl.store(acc, ty, offsets=[0])


# covers: Var nested_function
@pytest.mark.parametrize("backend", BACKENDS)
def test_vars_nested_helpers_and_closures(backend):
    n, tile = 4, 8
    x = np.random.default_rng(4).uniform(-1, 1, n * tile).astype(np.float32)
    y = np.full(tile, np.nan, np.float32)
    on(backend, carried_var_and_helpers)[1](x, y, n, tile)
    ref = (x.reshape(n, tile).astype(np.float64) * tile).sum(axis=0) + 1.0
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@tl.jit
def add_rows(acc, tx, t, tile: tl.ConstExpr[int]):
    for k in tl.range(2):  # a sub-kernel's own loop carries too
        acc = acc + tl.load(tx, [tile], offsets=[(2 * t + k) * tile])
    return acc


def uses_sub_kernel(x: GA, y: GA, n: int, tile: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [2 * n * tile]), tl.tensor(y, [tile])
    acc = tl.zeros([tile], tl.float32)
    for t in tl.range(n):
        acc = add_rows(acc, tx, t, tile)
    tl.store(acc, ty, offsets=[0])


# covers: sub_kernel
@pytest.mark.parametrize("backend", BACKENDS)
def test_sub_kernels_are_rewritten_too(backend):
    n, tile = 3, 8
    x = np.random.default_rng(5).uniform(-1, 1, 2 * n * tile).astype(np.float32)
    y = np.full(tile, np.nan, np.float32)
    on(backend, uses_sub_kernel)[1](x, y, n, tile)
    np.testing.assert_allclose(y, x.reshape(2 * n, tile).sum(axis=0), rtol=1e-5, atol=1e-5)


def temporaries(x: GA, y: GA, n: int):
    tx, ty = tl.tensor(x, [n * 8]), tl.tensor(y, [n * 8])
    t = tl.load(tx, [4], offsets=[0])  # a temporary of another shape, reused as a name below
    tl.store(t, ty, offsets=[0])
    for i in tl.range(n):
        t = tl.load(tx, [8], offsets=[i * 8])  # assigned before use: not carried
        tl.store(t + 1.0, ty, offsets=[i * 8])


# covers: loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
def test_temporaries_assigned_before_use_are_not_carried(backend):
    n = 3
    x = np.arange(n * 8, dtype=np.float32)
    y = np.full(n * 8, np.nan, np.float32)
    kernel = on(backend, temporaries)
    kernel[1](x, y, n)
    np.testing.assert_array_equal(y, x + 1.0)
    assert "yield" not in kernel.ir(x, y, n)  # nothing carried


def python_loops(y: GA, k: tl.ConstExpr[int]):
    ty = tl.tensor(y, [4])
    acc = tl.zeros([4], tl.float32)
    total = 0
    for j in tl.static_range(k):  # Python iteration: plain Python meaning
        acc = acc + float(j)
        total += j
    for j in range(2):
        acc = acc * 2.0
    tl.store(acc + float(total), ty, offsets=[0])


# covers: static_range
@pytest.mark.parametrize("backend", BACKENDS)
def test_python_loops_keep_python_meaning(backend):
    y = np.full(4, np.nan, np.float32)
    on(backend, python_loops)[1](y, 4)
    np.testing.assert_array_equal(y, np.full(4, (0 + 1 + 2 + 3) * 4 + 6, np.float32))
