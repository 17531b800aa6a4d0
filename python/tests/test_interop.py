"""Tensor interop: numpy and torch give the same results, zero-copy views, DLPack, classes."""

import numpy as np
import pytest
import torch
import torch.utils.dlpack

from conftest import make
from tileops import ops


def test_numpy_matches_torch():
    a, b = make((4, 33), torch.float32), make((33,), torch.float32, seed=1)
    w = make((33,), torch.float32, seed=2)
    got_np = ops.add(a.numpy(), b.numpy())
    assert isinstance(got_np, np.ndarray) and got_np.dtype == np.float32
    np.testing.assert_array_equal(got_np, ops.add(a, b).numpy())
    np.testing.assert_array_equal(ops.rms_norm(a.numpy(), w.numpy()), ops.rms_norm(a, w).numpy())
    np.testing.assert_array_equal(ops.scaled_softmax(a.numpy(), 2.0),
                                  ops.scaled_softmax(a, 2.0).numpy())
    np.testing.assert_array_equal(ops.cast(a.numpy(), dtype=np.float16),
                                  ops.cast(a, dtype=torch.float16).numpy())


def test_numpy_strided_views_are_zero_copy():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    view = base[::2, 1::3]
    out = np.zeros((6, 8), np.float32)
    ops.add(view, view, out[1::2, ::3])
    np.testing.assert_array_equal(out[1::2, ::3], 2 * view)
    assert out[0].sum() == 0
    t = torch.arange(48, dtype=torch.float32).reshape(6, 8).t()
    np.testing.assert_array_equal(ops.add(t, t).numpy(), (2 * t).numpy())


def test_outputs_written_in_place_and_aliasing():
    a = make((3, 16), torch.float32)
    expected = a * 2
    assert ops.add(a, a, a) is a
    assert torch.equal(a, expected)
    x = make((3, 16), torch.float32)
    ref = torch.softmax(x, -1)
    ops.scaled_softmax(x, 1.0, x)
    assert torch.allclose(x, ref, atol=1e-6)


def test_dlpack_objects_and_capsules():
    a = make((3, 5), torch.bfloat16)

    class Wrapper:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return torch.utils.dlpack.to_dlpack(self.t)

    out = torch.empty(3, 5, dtype=torch.bfloat16)
    ops.add(Wrapper(a), torch.utils.dlpack.to_dlpack(a), out)
    assert torch.equal(out, a + a)


def test_bool_int8_uint8_cast():
    x = torch.tensor([0.0, 2.5, -1.0, 300.0])
    assert ops.cast(x, dtype=torch.bool).tolist() == [False, True, True, True]
    assert ops.cast(x, dtype="int8").tolist() == [0, 2, -1, 127]
    assert ops.cast(x, dtype=np.uint8).tolist() == [0, 2, 0, 255]


def test_class_forms_and_cache():
    a, b = make((4, 9), torch.float32), make((4, 9), torch.float32, seed=1)
    add = ops.Add(a, b)
    assert torch.equal(add(a, b), a + b)
    assert torch.equal(add(b, a), a + b)
    with pytest.raises(ValueError, match="geometry"):
        add(make((5, 9), torch.float32), make((5, 9), torch.float32))
    sm = ops.ScaledSoftmax(a, 2.0)
    assert torch.allclose(sm(a), torch.softmax(2 * a, -1), atol=1e-6)
    cat = ops.Cat([a, b], dim=1)
    assert torch.equal(cat([a, b]), torch.cat([a, b], 1))
    ops.add(a, b)
    assert ops.cache_size() > 0
    ops.clear_cache()
    assert ops.cache_size() == 0
    assert 0 in ops.active_implementation_indices("rms_norm")
    assert "add" in ops.registered_operators()


def test_empty_tensors_do_not_crash():
    for empty in [torch.empty(0, 4), np.empty((0, 4), np.float32), torch.empty(4, 0)]:
        try:
            ops.add(empty, empty)
            ops.rms_norm(empty, torch.empty(empty.shape[-1]))
            ops.scaled_softmax(empty, 1.0)
        except (ValueError, TypeError):
            pass


def test_torch_tensors_are_read_in_cpp():
    # Built whenever torch's headers exist (scripts/setup.sh installs libtorch-dev); without it
    # every call pays ~5 Python calls per tensor.
    import tileops
    assert tileops._C._torch_fast_path(), (
        "tileops._torch_view is missing or was built for another torch: rebuild with "
        "libtorch-dev installed")


def test_torch_views_offsets_subclasses_and_layouts():
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    view = base[1:, 3:].t()[::2]  # storage offset, transposed, stepped
    np.testing.assert_array_equal(ops.add(view, view).numpy(), (2 * view).numpy())
    param = torch.nn.Parameter(make((4, 7), torch.bfloat16), requires_grad=False)
    assert torch.equal(ops.mul(param, param), param * param)
    scalar = torch.tensor(3.0)
    assert ops.add(scalar, scalar).item() == 6.0
    sparse = torch.eye(3).to_sparse()
    with pytest.raises(ValueError, match="input"):
        ops.add(sparse, sparse)
    with pytest.raises(TypeError, match="complex"):
        ops.add(torch.zeros(2, dtype=torch.complex64), torch.zeros(2, dtype=torch.complex64))
