"""Issue 35: hostile imports (DLPack geometry, read-only memory, neg/conj torch views) and
integer arguments beyond int64 give clear errors naming operator and argument, never a crash
or a silently wrong result."""

import ctypes

import numpy as np
import pytest
import torch

import tileops
from tileops import ops


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class HandMadeDLPack:
    """A float32 DLPack tensor over `buffer` with the given (possibly hostile) geometry."""

    def __init__(self, buffer, shape, strides=None, ndim=None, byte_offset=0, null_shape=False,
                 null_data=False):
        self.buffer = buffer  # kept alive by the test
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        m = DLManagedTensor()
        m.dl_tensor.data = None if null_data else buffer.ctypes.data
        m.dl_tensor.device = DLDevice(1, 0)  # kDLCPU
        m.dl_tensor.ndim = len(shape) if ndim is None else ndim
        m.dl_tensor.dtype = DLDataType(2, 32, 1)  # float32
        m.dl_tensor.shape = (None if null_shape else
                             ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)))
        m.dl_tensor.strides = (None if self.strides is None else
                               ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)))
        m.dl_tensor.byte_offset = byte_offset
        self.managed = m  # no deleter: the test owns everything

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)


BUF = np.ones(16, np.float32)


@pytest.mark.parametrize("kwargs, fragment", [
    # 2^32 * 2^32 elements wrapped to 0 before.
    (dict(shape=[2**32, 2**32], strides=[0, 0]), "add: argument 'input'"),
    (dict(shape=[2**62, 4], strides=[0, 1]), "add: argument 'input'"),
    (dict(shape=[3, 2**62]), "add: argument 'input'"),  # contiguous strides overflow
    (dict(shape=[4, 4], null_shape=True), "NULL shape"),
    (dict(shape=[4], null_data=True), "NULL"),
    (dict(shape=[4], ndim=9), "rank"),
    (dict(shape=[4], ndim=-1), "rank"),
    (dict(shape=[-4, -4]), "extents >= 0"),
    (dict(shape=[4], strides=[-1]), "non-negative strides"),
    (dict(shape=[4], byte_offset=2**64 - 8), "byte_offset"),
])
def test_hostile_dlpack_geometry_is_refused(kwargs, fragment):
    bad = HandMadeDLPack(BUF, **kwargs)
    with pytest.raises(ValueError, match="add: argument 'input'") as info:
        ops.add(bad, np.ones(4, np.float32))
    assert fragment in str(info.value)


def test_dlpack_size1_and_empty_geometry_still_accepted():
    one = HandMadeDLPack(BUF, shape=[1, 4], strides=[-7, 1])  # size-1 stride is never used
    np.testing.assert_array_equal(ops.add(one, one), np.full((1, 4), 2, np.float32))
    empty = HandMadeDLPack(BUF, shape=[0, 3], strides=[2**62, 2**62])  # strides of nothing
    assert ops.add(empty, np.ones(3, np.float32)).shape == (0, 3)


def test_read_only_memory_is_refused_as_output():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="add: argument 'out'.*read-only"):
        ops.add(x, x, bytes(16))
    with pytest.raises(ValueError, match="add: argument 'out'.*read-only"):
        ops.add(x, x, memoryview(bytes(16)).cast("f"))
    readonly = np.ones(4, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="add: argument 'out'.*read-only"):
        ops.add(x, x, readonly)
    out = bytearray(16)  # writable buffers are fine
    ops.add(x, x, memoryview(out).cast("f"))
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), 2 * x)


def test_negative_stride_on_size1_dim_is_ignored():
    x = np.arange(4, dtype=np.float32).reshape(1, 4)[::-1]
    assert x.strides[0] < 0
    np.testing.assert_array_equal(ops.add(x, x), 2 * x)
    t = torch.arange(4.0).reshape(1, 4)
    np.testing.assert_array_equal(ops.add(x, t.numpy()), 2 * x)


@pytest.fixture(params=["cpp", "python"])
def torch_reader(request):
    """Runs a test through tileops._torch_view and through the Python-attribute path."""
    if request.param == "cpp" and not tileops._C._torch_fast_path():
        pytest.fail("tileops._torch_view is not built (it needs torch's headers: Debian's "
                    "libtorch-dev, which scripts/setup.sh installs)")
    tileops._C._set_torch_fast_path(request.param == "cpp")
    yield request.param
    tileops._C._set_torch_fast_path(True)


def test_negative_bit_views_are_resolved_as_inputs(torch_reader):
    z = torch.complex(torch.arange(8.0), torch.arange(8.0) + 1)
    neg = z.conj().imag  # a real view with the negative bit
    assert neg.is_neg()
    assert torch.equal(ops.add(neg, torch.zeros(8)), -(torch.arange(8.0) + 1))
    x = torch.arange(6.0).reshape(2, 3)
    nv = torch._neg_view(x)
    assert torch.equal(ops.mul(nv, torch.ones(2, 3)), -x)
    assert torch.equal(ops.cast(nv, dtype=torch.float64), -x.double())


def test_negative_bit_views_are_refused_as_outputs(torch_reader):
    x = torch.arange(6.0)
    out = torch._neg_view(torch.zeros(6))
    with pytest.raises(ValueError, match="add: argument 'out'.*negative"):
        ops.add(x, x, out)
    assert torch.equal(out, torch.zeros(6))


@pytest.mark.parametrize("call, fragment", [
    (lambda: ops.top_k_top_p_sampler(torch.ones(2, 8), k=2**64),
     "top_k_top_p_sampler: argument 'k'"),
    (lambda: ops.top_k_top_p_sampler(torch.ones(2, 8), k=-2**63 - 1),
     "top_k_top_p_sampler: argument 'k'"),
    (lambda: ops.top_k_top_p_sampler(torch.ones(2, 8), p=10**400),
     "top_k_top_p_sampler: argument 'p'"),
    (lambda: ops.TopKTopPSampler(torch.ones(2, 8), k=2**64),
     "top_k_top_p_sampler: argument 'k'"),
    (lambda: ops.topk_topp_sampling(torch.ones(2, 8), topk=2**64),
     "topk_topp_sampling: argument 'topk'"),
    (lambda: ops.TopkToppSampling(torch.ones(2, 8), topk=-2**64),
     "topk_topp_sampling: argument 'topk'"),
    (lambda: ops.rotary_embedding(torch.zeros(2, dtype=torch.int64), torch.ones(2, 8), None, 8,
                                  torch.ones(4, 8), rotary_dim=2**64),
     "rotary_embedding: argument 'rotary_dim'"),
    (lambda: ops.flash_attention(torch.ones(2, 1, 8), torch.ones(2, 1, 8), torch.ones(2, 1, 8),
                                 num_heads=2**64),
     "flash_attention: argument 'num_heads'"),
    (lambda: ops.flash_attention(torch.ones(2, 1, 8), torch.ones(2, 1, 8), torch.ones(2, 1, 8),
                                 sliding_window=2**70),
     "flash_attention: argument 'sliding_window'"),
])
def test_integer_arguments_beyond_int64(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()


def test_integer_argument_of_wrong_type():
    with pytest.raises(TypeError, match="topk_topp_sampling: argument 'topk'.*an int"):
        ops.topk_topp_sampling(torch.ones(2, 8), topk=1.5)
    with pytest.raises(TypeError, match="top_k_top_p_sampler: argument 'k'"):
        ops.top_k_top_p_sampler(torch.ones(2, 8), k=1.5)


def test_cat_extent_sum_overflow():
    big = torch.zeros(1, dtype=torch.int8).expand(2**62)
    with pytest.raises(ValueError, match="cat: argument 'tensors'.*overflows int64"):
        ops.cat([big, big])


def test_tl_integer_arguments_beyond_their_range():
    from tileops import tl

    with pytest.raises(ValueError, match="tl.ceildiv: argument 'a'.*int64"):
        tl.ceildiv(2**64, 3)
    with pytest.raises(ValueError, match="called outside a kernel"):  # was SIGFPE
        tl.ceildiv(-2**63, -1)

    @tl.jit
    def far_dim(x: tl.GlobalAddress, n: int):
        t = tl.tensor(x, [n])
        tl.store(tl.reduce_sum(tl.load(t, [4], offsets=[0]), dims=2**32, keep_dims=True), t,
                 offsets=[0])  # dim 2**32 was truncated to dim 0

    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="dims out of range"):
        far_dim[1](x, 4)
    np.testing.assert_array_equal(x, np.ones(4, np.float32))


# Item 14: an output whose elements overlap each other is refused, the buffer untouched; a
# transposed or sliced output is still fine.
def test_self_overlapping_outputs_are_refused():
    x = torch.ones(4, 4)
    base = torch.full((16,), float("nan"))
    with pytest.raises(ValueError, match="add: argument 'out'.*overlap"):
        ops.add(x, x, base.as_strided((4, 4), (1, 1)))
    with pytest.raises(ValueError, match="rms_norm: argument 'out'.*overlap"):
        ops.rms_norm(x, torch.ones(4), 1e-6, base.as_strided((4, 4), (2, 1)))
    assert torch.isnan(base).all()
    t = torch.empty(4, 4).t()
    ops.add(x, x, t)
    torch.testing.assert_close(t, 2 * x)
