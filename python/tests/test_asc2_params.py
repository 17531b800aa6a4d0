"""asc2 kernel parameters: unannotated ones take their kind from the launch arguments (part of
the specialisation), numpy scalars stand for Python numbers, ConstExpr stays an annotation."""

import concurrent.futures

import numpy as np
import pytest
import torch

from tileops import asc, asc2, tl

TRACES = []


@asc2.jit
def affine(x, y, n, scale, shift, negate, tile: asc.ConstExpr[int]):
    TRACES.append(tile)
    tx, ty = asc2.tensor(x, [n]), asc2.tensor(y, [n])
    for i in asc2.range(asc2.block_idx(), asc2.ceildiv(n, tile), asc2.block_num()):
        v = asc2.load(tx, [tile], offsets=[i * tile]) * scale + shift
        asc2.store(asc2.where(negate, -v, v), ty, offsets=[i * tile])


def reference(x, scale, shift, negate):
    v = x.astype(np.float64) * float(scale) + float(shift)
    return -v if negate else v


class DLPackOnly:
    """Memory known only through the DLPack protocol."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, stream=None):
        return self._tensor.__dlpack__()

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


@pytest.mark.parametrize("memory", ["numpy", "torch", "dlpack"])
@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_unannotated_parameters_take_their_kind_from_arguments(memory, backend):
    kernel = asc2.jit(backend=backend)(affine.fn)
    x = np.random.default_rng(3).uniform(-2, 2, 41).astype(np.float32)
    y = np.zeros_like(x)
    wrap = {"numpy": lambda a: a, "torch": torch.from_numpy,
            "dlpack": lambda a: DLPackOnly(torch.from_numpy(a))}[memory]
    kernel[3](wrap(x), wrap(y), 41, 1.5, -0.25, True, 16)
    np.testing.assert_allclose(y, reference(x, 1.5, -0.25, True), rtol=1e-6, atol=1e-6)


def test_kinds_are_part_of_the_specialisation():
    kernel = asc2.jit(backend="interp")(affine.fn)
    x = np.arange(20, dtype=np.float32)
    y = np.zeros_like(x)
    TRACES.clear()
    kernel[2](x, y, 20, 2, 1, False, 8)            # scale, shift: runtime ints
    np.testing.assert_allclose(y, reference(x, 2, 1, False))
    kernel[2](x, y, 20, 2.5, 1.0, False, 8)        # floats: another specialisation
    np.testing.assert_allclose(y, reference(x, 2.5, 1.0, False))
    assert kernel.num_specialisations == 2 and len(TRACES) == 2
    kernel[2](x, y, 20, 3, 4, True, 8)             # ints again: the first one, not re-traced
    np.testing.assert_allclose(y, reference(x, 3, 4, True))
    assert kernel.num_specialisations == 2 and len(TRACES) == 2


def test_numpy_scalars_are_python_numbers():
    kernel = asc2.jit(backend="interp")(affine.fn)
    x = np.arange(20, dtype=np.float32)
    y = np.zeros_like(x)
    TRACES.clear()
    kernel[2](x, y, 20, 0.5, 2.0, False, 8)
    kernel[np.int64(2)](x, y, np.int64(20), np.float32(0.5), np.float64(2.0), np.bool_(True),
                        np.int32(8))
    np.testing.assert_allclose(y, reference(x, 0.5, 2.0, True))
    # np.int32(8) for ConstExpr[int] selects the trace of 8: same kinds, same value, one trace.
    assert TRACES == [8] and kernel.num_specialisations == 1


def test_numpy_scalars_in_bare_constexprs_and_torch_sizes():
    shapes = []

    @asc2.jit(backend="interp")
    def copy2d(x, y, shape: asc.ConstExpr):
        shapes.append(shape)
        tx, ty = asc2.tensor(x, shape), asc2.tensor(y, shape)
        asc2.store(asc2.load(tx, list(shape), offsets=[0, 0]), ty, offsets=[0, 0])

    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    y = torch.zeros_like(x)
    copy2d[1](x, y, x.shape)                       # torch.Size: the tuple (3, 4)
    copy2d[1](x, y, (np.int64(3), np.int32(4)))    # numpy ints in a tuple: the same key
    copy2d[1](x, y, (3, 4))
    assert torch.equal(x, y)
    assert shapes == [(3, 4)] and all(type(v) is int for v in shapes[0])


@pytest.mark.parametrize("value,message", [
    ("4", "argument 'n': an unannotated parameter takes its kind from its argument"),
    ([1, 2], "got list"),
    (None, "got NoneType")])
def test_unannotated_arguments_of_no_kind_are_refused(value, message):
    x = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=message):
        affine[1](x, x, value, 1.0, 0.0, False, 8)


@pytest.mark.parametrize("core_num,error", [(np.bool_(True), TypeError), (True, TypeError),
                                            (2.0, TypeError), (np.int64(-1), ValueError)])
def test_bad_core_nums(core_num, error):
    x = np.zeros(8, np.float32)
    with pytest.raises(error, match="core_num"):
        affine[core_num](x, x, 8, 1.0, 0.0, False, 8)


def test_launch_options_in_brackets():
    x = np.arange(40, dtype=np.float32)
    for launch in (asc.LaunchOptions(core_num=3), asc.LaunchOptions(), (3, None), np.uint8(2)):
        y = np.zeros_like(x)
        affine[launch](x, y, 40, 2.0, 0.0, False, 8)
        np.testing.assert_allclose(y, x * 2)
    with pytest.raises(ValueError, match="stream must be None"):
        affine[3, object()]
    with pytest.raises(ValueError, match="option 'stream' must be None"):
        asc.LaunchOptions(core_num=3, stream=object())


def test_constexpr_is_still_an_annotation():
    @asc2.jit(backend="interp")
    def wrong_kind(x, tile: asc.ConstExpr[int]):
        pass

    with pytest.raises(TypeError, match=r"argument 'tile': expected ConstExpr\[int\], got float"):
        wrong_kind[1](np.zeros(4, np.float32), 4.0)
    with pytest.raises(TypeError, match=r"expected ConstExpr\[int\], got float 4.0"):
        wrong_kind[1](np.zeros(4, np.float32), np.float64(4.0))  # a float, whatever its type


def test_tl_typed_constexprs_take_numpy_scalars_as_python_numbers():
    seen = []

    @tl.jit(backend="interp")
    def typed(x: tl.GlobalAddress, n: tl.ConstExpr[int], f: tl.ConstExpr[float],
              b: tl.ConstExpr[bool]):
        seen.append((n, f, b))

    x = np.zeros(4, np.float32)
    typed[np.int64(1)](x, np.int16(4), np.float32(0.5), np.bool_(True))
    typed[1](x, 4, 0.5, True)
    assert seen == [(4, 0.5, True)] and [type(v) for v in seen[0]] == [int, float, bool]
    with pytest.raises(TypeError, match=r"argument 'n': expected ConstExpr\[int\], got float32"):
        typed[1](x, np.float32(4), 0.5, True)


def test_tl_options_take_numpy_scalars():
    kernel = tl.jit(opt_level=np.int64(3), debug=np.bool_(True))(lambda x: None)
    assert kernel.options == {"opt_level": 3, "debug": True}
    with pytest.raises(TypeError, match="'debug': expected a bool"):
        tl.jit(debug=np.array([True, False]))(lambda x: None)
    with pytest.raises(TypeError, match="'opt_level': expected an integer"):
        tl.jit(opt_level=np.array([3, 3]))(lambda x: None)


def test_concurrent_launches_with_different_kinds():
    kernel = asc2.jit(backend="interp")(affine.fn)
    x = np.arange(30, dtype=np.float32)
    outputs = [np.zeros_like(x) for _ in range(8)]
    scales = [2, 2.5, 3, 0.5, 1, 1.5, 4, 0.25]  # ints and floats: two kinds, two engines

    def launch(i):
        kernel[2](x, outputs[i], 30, scales[i], 0.0, False, 8)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(launch, range(8)))
    for out, scale in zip(outputs, scales):
        np.testing.assert_allclose(out, reference(x, scale, 0.0, False))
    assert kernel.num_specialisations == 2
