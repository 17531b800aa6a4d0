"""The AST front-end of @tl.jit (tileops/_frontend.py): the cases an adversarial review found
(runtime ifs and loops inside Python loops, loop-else, walrus, temporaries redefined in branches,
numbers meeting typed values). Every kernel runs on both backends (interp and cpu) against numpy."""

import numpy as np
import pytest

from tileops import tl

GA = tl.GlobalAddress
BACKENDS = ("interp", "cpu")


def on(backend, fn):
    return tl.jit(backend=backend)(fn)


def if_in_python_loop(y: GA, a: int, n: int):
    ty = tl.tensor(y, [12])
    z = tl.zeros([4], tl.float32)
    for j in range(2):  # each iteration's runtime if leaves Vars behind
        if a > j:
            z = z + 1.0
    for h in range(3):
        for i in tl.range(1):
            acc = tl.zeros([4], tl.float32)
            for k in tl.range(n):
                acc = acc + 1.0
            tl.store(acc + z, ty, offsets=[h * 4])


# covers: runtime_if loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a", [0, 1, 2])
def test_runtime_ifs_and_loops_inside_python_loops(backend, a):
    y = np.full(12, np.nan, np.float32)
    on(backend, if_in_python_loop)[1](y, a, 2)
    np.testing.assert_array_equal(y, np.full(12, 2.0 + min(a, 2), np.float32))


def loop_else_and_declared_names(x: GA, y: GA, n: int):
    tx, ty = tl.tensor(x, [12]), tl.tensor(y, [16])
    acc = tl.zeros([4], tl.float32)
    for t in tl.range(n):
        acc = acc + tl.load(tx, [4], offsets=[t * 4])
        tl.store(acc, ty, offsets=[t * 4])
    else:
        acc = acc * 2.0  # a runtime loop's else runs after it, on its results
    tl.store(acc, ty, offsets=[12])

    def unused():  # declares `acc` nonlocal in its own scope only
        nonlocal acc
        acc = None


# covers: loop_carried nested_function
@pytest.mark.parametrize("backend", BACKENDS)
def test_loop_else_and_names_declared_in_nested_functions(backend):
    x = np.arange(12, dtype=np.float32)
    y = np.full(16, np.nan, np.float32)
    on(backend, loop_else_and_declared_names)[1](x, y, 3)
    sums = np.cumsum(x.reshape(3, 4), axis=0)
    np.testing.assert_array_equal(y, np.concatenate([sums.ravel(), 2 * sums[-1]]))


def walrus_and_nested_jit(y: GA, n: int, T: tl.ConstExpr[int]):
    a = 1.0
    b = 1.0
    w = (a := 5.0) if T > 2 else 0.0  # a walrus binds in the kernel, not in a helper lambda
    if T > 2 and (b := 7.0) > 0.0:
        pass

    @tl.jit
    def part(m):  # a sub-kernel defined inside the kernel
        acc = tl.zeros([4], tl.float32)
        for t in tl.range(m):
            acc = acc + 1.0
        return acc

    tl.store(part(n) + (a * 100.0 + b * 10.0 + w), tl.tensor(y, [4]), offsets=[0])


# covers: sub_kernel ifexp
@pytest.mark.parametrize("backend", BACKENDS)
def test_walrus_and_sub_kernels_defined_in_kernels(backend):
    y = np.full(4, np.nan, np.float32)
    on(backend, walrus_and_nested_jit)[1](y, 3, 3)
    np.testing.assert_array_equal(y, np.full(4, 3 + 575, np.float32))


def reused_temporary(x: GA, y: GA, n: int, flag: int):
    tx, ty = tl.tensor(x, [16]), tl.tensor(y, [8])
    for t in tl.range(n):
        v = tl.load(tx, [4], offsets=[t * 4])  # a [4] temporary
        tl.store(v, ty, offsets=[0])
    if flag > 0:  # both paths redefine it as [8]: its old type does not bind them
        v = tl.full([8], 1.0, tl.float32)
    else:
        v = tl.full([8], 2.0, tl.float32)
    tl.store(v, ty, offsets=[0])


# covers: runtime_if
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flag", [0, 1])
def test_a_temporary_redefined_in_both_branches_takes_their_type(backend, flag):
    x = np.arange(16, dtype=np.float32)
    y = np.full(8, np.nan, np.float32)
    on(backend, reused_temporary)[1](x, y, 2, flag)
    np.testing.assert_array_equal(y, np.full(8, 1.0 if flag else 2.0, np.float32))


def skips_with_continue(x: GA, y: GA, n: int):
    tx = tl.tensor(x, [12])
    acc = tl.zeros([4], tl.float32)
    r = tl.range(n)
    for t in r:
        acc = acc + tl.load(tx, [4], offsets=[t * 4])
        continue


def raises_in_runtime_if(y: GA, n: int):
    if n < 0:
        raise ValueError("n must be >= 0")


def container_state(y: GA, n: int):
    s = [tl.zeros([4], tl.float32)]
    for t in tl.range(n):
        s[0] = s[0] + 1.0
        tl.store(s[0], tl.tensor(y, [4]), offsets=[0])


def wrapped_range(y: GA, n: int):
    acc = tl.zeros([4], tl.float32)
    for i, t in enumerate(tl.range(n)):
        acc = acc + 1.0


def ifexp_shapes(y: GA, n: int):
    v = tl.full([1], 5.0, tl.float32) if n > 0 else tl.full([4], 1.0, tl.float32)
    tl.store(v, tl.tensor(y, [4]), offsets=[0])


# covers: trace_errors loop_carried
@pytest.mark.parametrize("fn,exc,words", [
    (skips_with_continue, ValueError, ["left before its end ('continue')"]),
    (raises_in_runtime_if, ValueError, ["'raise' inside a runtime if"]),
    (container_state, ValueError, ["stored into a container or attribute"]),
    (wrapped_range, ValueError, ["iterable of a `for` statement itself"]),
    (ifexp_shapes, TypeError, ["the two sides of `a if c else b`"]),
])
def test_constructs_the_review_found_are_errors(fn, exc, words):
    y = np.zeros(4, np.float32)
    with pytest.raises(exc) as info:
        on("interp", fn)[1](*((np.arange(12, dtype=np.float32), y) if fn is skips_with_continue
                              else (y,)), 3)
    for w in words:
        assert w in str(info.value), str(info.value)
    assert f"{__file__.rsplit('/', 1)[-1]}:" in str(info.value)


def numbers_adopt_types(x: GA, y: GA, n: int, c: int):
    tx, ty = tl.tensor(x, [4]), tl.tensor(y, [3])
    z = 1
    if c > 0:
        z = 2.5  # two numbers: the float one's dtype
    s = tl.reduce_sum(tl.load(tx, [4], offsets=[0]))
    if c > 1:
        s = 1  # a number takes the float32 sum's dtype
    total = tl.reduce_sum(tl.load(tx, [4], offsets=[0]))
    for t in tl.range(n):
        if t == 1:
            total = 0  # set in the loop: takes the carried float32
        total = total + 1.0
    tl.store(tl.where(tl.arange(3) == 0, z, tl.where(tl.arange(3) == 1, s, total)), ty,
             offsets=[0])


# covers: runtime_if loop_carried
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("c", [0, 1, 2])
def test_numbers_take_the_type_of_what_they_meet(backend, c):
    x = np.array([1.5, 2.0, 3.0, 4.0], np.float32)
    y = np.full(3, np.nan, np.float32)
    on(backend, numbers_adopt_types)[1](x, y, 3, c)
    total = x.sum()
    for t in range(3):
        total = (0 if t == 1 else total) + 1.0
    np.testing.assert_array_equal(y, [2.5 if c > 0 else 1, 1 if c > 1 else x.sum(), total])
