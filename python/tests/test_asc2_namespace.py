"""tileops.asc2 / tileops.asc: the names asc2 programs use, asc.runtime.config's backends, and
asc2's integer division."""

import numpy as np
import pytest

import tileops
from tileops import _C, asc, asc2, tl
import tileops.asc.runtime.config as config

# The names the seeds (000, 001) use from asc2 and asc.
ASC2_NAMES = ["jit", "range", "static_range", "load", "store", "tensor", "full", "zeros", "abs",
              "exp", "log", "sqrt", "relu", "erf", "tanh", "sin", "cos", "where", "reduce_sum",
              "reduce_max", "softmax", "matmul", "block_idx", "block_num", "rms_norm", "mask",
              "float16", "float32", "GlobalAddress", "ConstExpr", "ceildiv"]
ASC_NAMES = ["GlobalAddress", "ConstExpr", "ceildiv", "float16", "float32", "CodegenOptions",
             "CompileOptions", "LaunchOptions", "KernelType", "runtime"]


@pytest.fixture(autouse=True)
def restore_platform():
    yield
    config.reset()


def test_import_forms():
    import tileops.asc2 as asc2_module
    from tileops import asc2 as asc2_from
    assert asc2_module is asc2_from is tileops.asc2
    assert asc.runtime.config is config
    for name in ASC2_NAMES:
        assert hasattr(asc2, name), name
    for name in ASC_NAMES:
        assert hasattr(asc, name), name
    # The tile functions are tileops.tl's own, not copies with other semantics.
    assert asc2.load is tl.load and asc2.softmax is tl.softmax and asc2.float16 is tl.float16
    assert asc.ConstExpr is tl.ConstExpr and asc.GlobalAddress is tl.GlobalAddress


@pytest.mark.parametrize("a,b,expected", [(1000, 256, 4), (np.int64(1024), 256, 4),
                                          (np.prod((3, 5)), np.int32(4), 4), (0, 7, 0),
                                          (-7, 2, -3), (7, -2, -3)])
def test_host_ceildiv_returns_python_ints(a, b, expected):
    for ceildiv in (asc.ceildiv, asc2.ceildiv, tl.ceildiv):
        got = ceildiv(a, b)
        assert got == expected and type(got) is int


def test_host_ceildiv_by_zero():
    with pytest.raises(ZeroDivisionError, match="b must not be 0"):
        asc.ceildiv(np.int64(4), 0)


def test_set_platform_maps_backends():
    assert config.tileops_backend() is None  # tileops' default until set
    config.set_platform(config.Backend.Model, config.Platform.Ascend950PR_9599)
    assert config.tileops_backend() == "interp"
    assert config.get_platform() is config.Platform.Ascend950PR_9599
    config.set_platform("NPU")  # the names asc's -r flag takes
    assert config.tileops_backend() == "cpu" and config.get_platform() is None
    assert config.get_backend() is config.Backend.NPU
    with pytest.raises(ValueError, match="backend must be one of Model, NPU"):
        config.set_platform("GPU")
    with pytest.raises(ValueError, match="platform must be one of .*Ascend950PR_9599"):
        config.set_platform("Model", "Ascend9000")
    assert config.tileops_backend() == "cpu"  # a refused call changes nothing


@asc2.jit
def scaled(x, y, n: int, tile: asc.ConstExpr[int]):
    tx, ty = asc2.tensor(x, [n]), asc2.tensor(y, [n])
    for i in asc2.range(asc2.block_idx(), asc2.ceildiv(n, tile), asc2.block_num()):
        asc2.store(asc2.load(tx, [tile], offsets=[i * tile]) * 2.0, ty, offsets=[i * tile])


@pytest.mark.parametrize("backend,files", [("Model", {".tlir"}), ("NPU", {".tlir", ".cc"})])
def test_launches_follow_set_platform(tmp_path, backend, files):
    # Which backend ran shows in dump_dir: the cpu backend writes its C++ source, interp no.
    config.set_platform(backend)
    kernel = asc2.jit(dump_dir=str(tmp_path))(scaled.fn)
    x = np.arange(37, dtype=np.float32)
    y = np.zeros_like(x)
    kernel[3](x, y, 37, 16)
    np.testing.assert_array_equal(y, x * 2)
    assert files <= {p.suffix for p in tmp_path.iterdir()}
    if backend == "Model":
        assert ".cc" not in {p.suffix for p in tmp_path.iterdir()}


def test_backend_in_the_decorator_wins_over_set_platform(tmp_path):
    config.set_platform("NPU")
    kernel = asc2.jit(backend="interp", dump_dir=str(tmp_path))(scaled.fn)
    x = np.ones(8, np.float32)
    y = np.zeros_like(x)
    kernel[1](x, y, 8, 8)
    assert y.tolist() == [2.0] * 8
    assert ".cc" not in {p.suffix for p in tmp_path.iterdir()}


class RecordingDivision:
    """A stand-in for the engine's _set_int_division hook: records the mode while tracing."""

    def __init__(self):
        self.mode, self.seen = "default", []

    def __call__(self, mode):
        previous, self.mode = self.mode, mode
        self.seen.append(mode)
        return previous


def test_asc2_traces_with_truncating_division(monkeypatch):
    hook = RecordingDivision()
    monkeypatch.setattr(_C.tl, "_set_int_division", hook, raising=False)
    modes = []

    @tl.jit
    def tl_sub(n):
        modes.append(("tl sub-kernel", hook.mode))
        return n

    @asc2.jit
    def asc2_sub(n):
        modes.append(("asc2 sub-kernel", hook.mode))
        return n

    @asc2.jit
    def asc2_kernel(x, n: int):
        modes.append(("asc2", hook.mode))
        tl_sub(n)
        asc2_sub(n)

    @tl.jit
    def tl_kernel(x: tl.GlobalAddress, n: int):
        modes.append(("tl", hook.mode))
        asc2_sub(n)

    x = np.zeros(4, np.float32)
    asc2_kernel[1](x, 4)
    tl_kernel[1](x, 4)
    assert modes == [("asc2", "trunc"), ("tl sub-kernel", "default"), ("asc2 sub-kernel", "trunc"),
                     ("tl", "default"), ("asc2 sub-kernel", "trunc")]
    assert hook.mode == "default"  # restored after each trace


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_integer_division_truncates_in_asc2(backend):
    @asc2.jit(backend=backend)
    def divide(a, b, out, n: asc.ConstExpr[int]):
        ta, tb, to = asc2.tensor(a, [n]), asc2.tensor(b, [n]), asc2.tensor(out, [n])
        asc2.store(asc2.load(ta, [n], offsets=[0]) / asc2.load(tb, [n], offsets=[0]), to,
                   offsets=[0])

    rng = np.random.default_rng(7)
    a = rng.integers(-100, 100, 33).astype(np.int32)
    b = rng.integers(1, 9, 33).astype(np.int32) * rng.choice([-1, 1], 33).astype(np.int32)
    out = np.full(33, -12345, np.int32)
    divide[1](a, b, out, 33)
    np.testing.assert_array_equal(out, np.trunc(a / b).astype(np.int32))
