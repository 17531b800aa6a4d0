"""Control flow and the programming model from Python: tl.if_, tl.Var, tl.static_range,
tl.range options, masks, atomics, sub-kernels and ConstExpr kinds."""

import numpy as np
import pytest

from tileops import tl
from tl_support import CORE_NUMS

GA = tl.GlobalAddress


@tl.jit
def branches(out: GA, flag: int, scale: float, traced_flag: tl.ConstExpr[bool]):
    t = tl.tensor(out, [8])
    acc = tl.Var(tl.full([8], 1.0, tl.float32))

    def then():
        acc.set(acc * scale)

    def otherwise():
        acc.set(acc - 1.0)

    tl.if_(flag > 0, then, otherwise)  # runtime: both branches traced, acc is their result
    tl.if_(traced_flag, lambda: acc.set(acc + 10.0))  # trace time: only taken branches exist
    tl.if_(flag, lambda: tl.store(acc, t, offsets=[0]), lambda: tl.store(-acc, t, offsets=[0]))


# covers: if_ if_trace_time Var Bool
def test_if_with_var_results_and_trace_time_conditions():
    out = np.zeros(8, np.float32)
    branches[1](out, 1, 3.0, False)
    assert (out == 3.0).all()
    branches[1](out, 0, 3.0, False)
    assert (out == -0.0).all()
    branches[1](out, 2, 0.5, True)
    assert (out == 10.5).all()
    assert branches.num_specialisations == 2  # runtime flags never retrace
    assert branches.ir(out, 1, 1.0, False).count("if ") == 2
    assert branches.ir(out, 1, 1.0, True).count("if ") == 2


@tl.jit
def unrolled(out: GA, n: int, k: tl.ConstExpr[int], unroll: tl.ConstExpr[int]):
    t = tl.tensor(out, [n])
    acc = tl.Var(tl.zeros([4], tl.float32))
    for j in tl.static_range(k):  # j is a Python int: the body is traced k times
        acc += float(j)
    for i in tl.range(0, n, 4, unroll_factor=unroll, parallel=True):
        tl.store(acc + tl.arange(4, tl.float32), t, offsets=[i])


# covers: static_range unroll_factor parallel arange
@pytest.mark.parametrize("unroll", [1, 4])
def test_static_range_and_range_options(unroll):
    out = np.full(18, np.nan, np.float32)
    unrolled[1](out, 18, 3, unroll)
    assert out.tolist() == [3.0 + (i % 4) for i in range(18)]
    ir = unrolled.ir(out, 18, 3, unroll)
    assert ir.count("for ") == 1 and f"unroll={unroll}" in ir and "parallel" in ir


@tl.jit
def masked_and_atomic(out: GA, acc: GA, n: int, count: int):
    t = tl.tensor(out, [n])
    with tl.mask(count):
        tl.store(tl.full([16], 5.0, tl.float32), t, offsets=[0])
    a = tl.tensor(acc, [3])
    tl.atomic_add(tl.full([1], 1.0, tl.float32), a, offsets=[0])
    b = tl.block_idx().to(tl.float32)
    tl.atomic_max(tl.broadcast_to(b, [1]), a, offsets=[1])
    tl.atomic_min(tl.broadcast_to(b, [1]), a, offsets=[2])


# covers: mask atomic_add atomic_max atomic_min broadcast_to
@pytest.mark.parametrize("cores", CORE_NUMS)
def test_mask_and_atomics(cores):
    out = np.zeros(16, np.float32)
    acc = np.array([0.0, -1.0, 100.0], np.float32)
    masked_and_atomic[cores](out, acc, 16, 5)
    assert out.tolist() == [5.0] * 5 + [0.0] * 11
    assert acc.tolist() == [float(cores), float(cores - 1), 0.0]


@tl.jit
def twice(x):
    """A sub-kernel: called from a kernel, traced inline with its caller's Values."""
    return x * 2


@tl.jit
def calls_sub_kernel(x: GA, y: GA, shape: tl.ConstExpr[tuple], dtype: tl.ConstExpr):
    tx, ty = tl.tensor(x, list(shape)), tl.tensor(y, list(shape))
    tile = tl.load(tx, shape, offsets=[0] * len(shape))
    assert tile.shape == shape and tile.size == np.prod(shape)  # trace-time Python facts
    tl.store(twice(tile).to(dtype), ty, offsets=[0] * len(shape))


# covers: ConstExpr to
def test_sub_kernel_and_constexpr_kinds():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y16 = np.zeros((3, 4), np.float16)
    calls_sub_kernel[1](x, y16, (3, 4), tl.float16)
    assert np.array_equal(y16, (x * 2).astype(np.float16))
    y32 = np.zeros((3, 4), np.float32)
    calls_sub_kernel[1](x, y32, (3, 4), tl.float32)
    assert np.array_equal(y32, x * 2)
    assert calls_sub_kernel.num_specialisations == 2


@tl.jit
def var_in_nested_loops(out: GA, rows: int, cols: int):
    t = tl.tensor(out, [rows])
    total = tl.Var(0.0)  # a scalar seeded with a literal
    for r in tl.range(rows):
        row = tl.Var(tl.zeros([1], tl.float32))
        for c in tl.range(cols):
            row += (r * cols + c).to(tl.float32)
        total += tl.reduce_sum(row)
        tl.store(total, t, offsets=[r])


# covers: range Var
def test_vars_in_nested_loops_are_carried():
    out = np.zeros(4, np.float32)
    var_in_nested_loops[1](out, 4, 3)
    assert out.tolist() == list(np.cumsum([sum(r * 3 + c for c in range(3)) for r in range(4)]))


@tl.jit
def tiles_and_blocks(x: GA, out: GA, n: int, tile: tl.ConstExpr[int]):
    tx = tl.tensor(x, [n])
    tiles = tl.num_tiles(tx, 0, tile)
    for i in tl.range(tl.block_idx(), tiles, tl.block_num()):
        tl.store(tl.load(tx, [tile], tile_id=[i]) + 1.0, tl.tensor(out, [n]), tile_id=[i])


# covers: num_tiles tile_id core_num_0
def test_num_tiles_and_tile_id():
    x = np.arange(37, dtype=np.float32)
    out = np.full(37, np.nan, np.float32)
    tiles_and_blocks(x, out, 37, 8)  # every core
    assert np.array_equal(out, x + 1)


@tl.jit
def block_branches(out: GA, n: int, with_else: tl.ConstExpr[bool]):
    t = tl.tensor(out, [4])
    acc = tl.Var(tl.full([4], 1.0, tl.float32))
    with tl.if_(n > 2):
        acc += 10.0
        with tl.if_(n > 5):  # nested
            acc *= 2.0
    if with_else:
        with tl.else_():
            acc -= 1.0
    tl.store(acc, t, offsets=[0])


# covers: if_ Var
@pytest.mark.parametrize("n,with_else,expected", [
    (1, False, 1.0), (3, False, 11.0), (6, False, 22.0), (1, True, 0.0), (3, True, 11.0),
    (6, True, 22.0)])
def test_if_block_form_with_else(n, with_else, expected):
    out = np.zeros(4, np.float32)
    block_branches[1](out, n, with_else)
    assert (out == expected).all()


def test_else_must_follow_its_if_block():
    @tl.jit
    def stray_else(out: GA, n: int):
        with tl.else_():
            pass

    @tl.jit
    def late_else(out: GA, n: int):
        with tl.if_(n > 2):
            tl.store(1.0, tl.tensor(out, [4]), offsets=[0])
        tl.store(2.0, tl.tensor(out, [4]), offsets=[1])
        with tl.else_():
            pass

    out = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="'else_'"):
        stray_else[1](out, 4)
    with pytest.raises(ValueError, match="directly follow"):
        late_else[1](out, 4)
    assert not out.any()
