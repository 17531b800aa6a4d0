"""Launching Python kernels: arguments by pointer (no copies, never zeroed), numpy and torch
alike, the specialisation cache, options, the GIL released while blocks run, thread safety."""

import threading
import time

import numpy as np
import pytest
import torch

from tileops import tl
from tl_support import f64, poisoned, rand

TRACES = []  # appended to while tracing: counts traces, not launches


@tl.jit
def scale(x: tl.GlobalAddress, y: tl.GlobalAddress, n: int, alpha: float,
          tile: tl.ConstExpr[int]):
    TRACES.append(tile)
    tx, ty = tl.tensor(x, [n]), tl.tensor(y, [n])
    for i in tl.range(tl.block_idx(), tl.ceildiv(n, tile), tl.block_num()):
        tl.store(tl.load(tx, [tile], offsets=[i * tile]) * alpha, ty, offsets=[i * tile])


# covers: cache ConstExpr core_num_0
def test_cache_traces_once_per_specialisation():
    TRACES.clear()
    x = rand([100], "float32", 1)
    y = np.zeros(100, np.float32)
    scale[2](x, y, 100, 2.0, 32)
    scale[3](x, y, 50, 3.0, 32)  # new runtime scalars and block count: no retrace
    scale(torch.from_numpy(x), torch.zeros(100), 100, 2.0, 32)  # torch, same dtype: none
    assert TRACES == [32] and scale.num_specialisations == 1
    scale[2](x, y, 100, 2.0, 64)  # a ConstExpr change retraces
    assert TRACES == [32, 64] and scale.num_specialisations == 2
    scale[2](x.astype(np.float16), y.astype(np.float16), 100, 2.0, 64)  # so does a dtype
    assert TRACES == [32, 64, 64] and scale.num_specialisations == 3
    np.testing.assert_array_equal(y, (f64(x) * 2.0).astype(np.float32))


# covers: GlobalAddress launch
def test_arrays_are_passed_by_pointer():
    x = rand([64], "float32", 2)
    x_before = x.copy()
    y = np.full(64, np.nan, np.float32)
    y_address = y.ctypes.data
    scale[1](x, y, 64, 0.5, 16)
    assert y.ctypes.data == y_address and np.array_equal(y, x * np.float32(0.5))
    assert np.array_equal(x, x_before)  # inputs untouched, never zeroed
    # A view into a bigger buffer: the kernel sees exactly the view's memory.
    buf = np.zeros(80, np.float32)
    scale[1](x, buf[8:72], 64, 1.0, 16)
    assert np.array_equal(buf[8:72], x) and not buf[:8].any() and not buf[72:].any()
    t = torch.zeros(64)
    scale[1](torch.from_numpy(x), t, 64, 1.0, 16)
    assert torch.equal(t, torch.from_numpy(x))


@tl.jit
def widen_and_narrow(q: tl.GlobalAddress, x: tl.GlobalAddress, wide: tl.GlobalAddress,
                     narrow: tl.GlobalAddress, n: int):
    tl.store(tl.load(tl.tensor(q, [n]), [256], offsets=[0]).to(tl.float32), tl.tensor(wide, [n]),
             offsets=[0])
    tl.store(tl.load(tl.tensor(x, [n]), [256], offsets=[0]).to(q.dtype), tl.tensor(narrow, [n]),
             offsets=[0])


# covers: GlobalAddress launch
def test_reinterpret_passes_8_bit_floats_over_uint8_storage():
    # float8_e5m2 is float16's top byte: every code decodes as float16 bits << 8 (NaNs as NaN);
    # its finite values round-trip exactly through float32, by pointer (uint8 in place).
    codes = np.arange(256, dtype=np.uint8)
    want = (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    finite = np.isfinite(want)
    wide, narrow = poisoned([256], "float32"), np.full(256, 0x7F, np.uint8)
    address = narrow.ctypes.data
    e5m2 = tl.reinterpret(codes, tl.float8_e5m2)
    widen_and_narrow[1](e5m2, np.where(finite, want, 0), wide,
                        tl.reinterpret(narrow, "float8_e5m2"), 256)
    assert np.array_equal(wide, want, equal_nan=True)
    assert narrow.ctypes.data == address
    assert np.array_equal(narrow[finite], codes[finite])
    with pytest.raises(TypeError, match="float8_e5m2"):  # the sizes differ: not reinterpretable
        widen_and_narrow[1](tl.reinterpret(np.zeros(256, np.float32), tl.float8_e5m2),
                            np.zeros(256, np.float32), wide, narrow, 256)


def test_dlpack_objects_are_accepted():
    x = torch.arange(32, dtype=torch.float32)
    y = torch.zeros(32)

    class Capsule:  # any object with __dlpack__
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

    scale[1](Capsule(x), Capsule(y), 32, 2.0, 16)
    assert torch.equal(y, x * 2)


# covers: Float Bool
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_numpy_and_torch_give_identical_bits(dtype):
    x = rand([1000], dtype, 3)
    out_t = poisoned([1000], dtype)
    xt = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
    yt = out_t if isinstance(out_t, torch.Tensor) else torch.from_numpy(out_t.copy())
    scale[3](xt, yt, 1000, 0.3, 128)
    if dtype != "bfloat16":
        y = poisoned([1000], dtype)
        scale[3](x, y, 1000, 0.3, 128)
        assert y.tobytes() == yt.numpy().tobytes()
    assert not torch.isnan(yt.float()).any()


def test_gil_is_released_while_blocks_run():
    # The interpreter makes the launch long (~0.3 s) next to Python's 5 ms switch interval; a
    # compiled launch can end before this thread is scheduled at all.
    slow_scale = tl.jit(backend="interp")(scale.fn)
    n = 1 << 20
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    slow_scale[2](x, y, n, 1.0, 64)  # traced now: the timed launch runs blocks only
    ticks = 0
    worker = threading.Thread(target=lambda: slow_scale[2](x, y, n, 3.0, 64))
    start = time.perf_counter()  # for the failure message
    worker.start()
    while worker.is_alive():
        ticks += 1
    elapsed = time.perf_counter() - start
    assert (y == 3.0).all()
    # With the GIL held the whole launch, this thread could not count at all meanwhile.
    assert ticks > 1000, (elapsed, ticks)


def test_concurrent_launches_from_threads():
    errors = []

    def run(seed):
        try:
            x = rand([3000], "float32", seed)
            for _ in range(5):
                y = np.full(3000, np.nan, np.float32)
                scale[3](x, y, 3000, float(seed), 256)
                assert np.array_equal(y, (f64(x) * seed).astype(np.float32))
        except AssertionError as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,)) for s in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# covers: options print_ir dump_dir always_compile
def test_options(tmp_path, capfd):
    with pytest.raises(ValueError, match="bogus"):
        tl.jit(bogus=True)(scale.fn)
    with pytest.raises(ValueError, match="opt_level"):
        tl.jit(opt_level=7)(scale.fn)
    with pytest.raises(ValueError, match="backend"):
        tl.jit(backend="tpu")(scale.fn)
    with pytest.raises(TypeError, match="debug"):
        tl.jit(debug="yes")(scale.fn)
    x, y = rand([40], "float32", 4), np.zeros(40, np.float32)
    TRACES.clear()
    k = tl.jit(print_ir=True, dump_dir=str(tmp_path), always_compile=True, opt_level=3)(scale.fn)
    k[2](x, y, 40, 2.0, 16)
    k[2](x, y, 40, 2.0, 16)
    assert TRACES == [16, 16]  # always_compile retraces every launch
    err = capfd.readouterr().err
    assert "tl IR of scale after tracing" in err and "test_tl_launch.py:" in err
    assert list(tmp_path.glob("scale-*.tlir"))
    assert "kernel @scale" in k.ir(x, y, 40, 2.0, 16)
    with pytest.raises(NotImplementedError, match="cuda"):
        tl.jit(backend="cuda")(scale.fn)[1](x, y, 40, 2.0, 16)


def test_keyword_arguments_and_defaults():
    @tl.jit
    def fill(out: tl.GlobalAddress, n: int, value: float = 7.0, tile: tl.ConstExpr[int] = 8):
        t = tl.tensor(out, [n])
        for i in tl.range(tl.ceildiv(n, tile)):
            tl.store(tl.full([tile], value, tl.float32), t, offsets=[i * tile])

    out = np.zeros(20, np.float32)
    fill[1](out, n=20)
    assert (out == 7.0).all()
    fill[1](out, 20, tile=4, value=-1.0)
    assert (out == -1.0).all()
