"""Every operator against torch 1.13 references: dtype x implementation index x layout."""

import pytest
import torch
import torch.nn.functional as F

from conftest import LAYOUTS, assert_close, indices, make, params
from tileops import ops

ROWS, COLS = 5, 67  # odd sizes: SIMD tails


@params("add", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64])
def test_add(dtype, index, layout):
    a, b = make((ROWS, COLS), dtype, layout), make((COLS,), dtype, seed=1)
    got = ops.add(a, b, implementation_index=index)
    ref = (a.double() + b.double()) if not dtype.is_floating_point else (a.float() + b.float())
    assert got.dtype == dtype and got.shape == (ROWS, COLS)
    assert_close(got, ref.to(dtype).double() if dtype.is_floating_point else ref, dtype)


@params("mul", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64])
def test_mul(dtype, index, layout):
    a, b = make((ROWS, 1, COLS), dtype, layout), make((3, COLS), dtype, seed=1)
    out = torch.empty((ROWS, 3, COLS), dtype=dtype)
    got = ops.mul(a, b, out, implementation_index=index)
    assert got is out
    ref = a.to(torch.float64) * b.to(torch.float64)
    assert_close(got, ref.to(dtype).double() if dtype.is_floating_point else ref, dtype)


INTEGERS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def full_range(shape, dtype, seed, strided=False):
    """Integers over the dtype's whole range (products and sums wrap); strided: every other
    element of the last dim."""
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(seed)
    wide = list(shape[:-1]) + [shape[-1] * 2] if strided else list(shape)
    if dtype == torch.int64:  # randint's bound is an int64 itself: draw the bits in two halves
        hi = torch.randint(-(1 << 31), 1 << 31, wide, generator=gen, dtype=torch.int64)
        lo = torch.randint(0, 1 << 32, wide, generator=gen, dtype=torch.int64)
        base = hi * (1 << 32) + lo
    else:
        base = torch.randint(info.min, info.max + 1, wide, generator=gen, dtype=dtype)
    return base[..., ::2] if strided else base


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_integer_add_mul_wrap_as_torch(op, dtype, layout):
    """Every integer dtype wraps modulo 2^n exactly as torch's add/mul: broadcasting, tails of
    odd widths, strided operands and outputs, every implementation."""
    torch_op = torch.add if op == "add" else torch.mul
    strided = layout == "strided"
    cases = [((ROWS, COLS), (COLS,)), ((ROWS, 1, COLS), (3, COLS)), ((9, 1), (1, 33)),
             ((1,), (1031,)), ((4, 2, 7), (4, 2, 7))]
    for index in indices(op):
        for seed, (a_shape, b_shape) in enumerate(cases):
            a, b = full_range(a_shape, dtype, seed, strided), full_range(b_shape, dtype, seed + 50)
            ref = torch_op(a, b)
            assert ref.dtype == dtype
            got = getattr(ops, op)(a, b, implementation_index=index)
            assert got.dtype == dtype and torch.equal(got, ref), (index, a_shape, b_shape)
            out = full_range(tuple(ref.shape), dtype, 99, strided)
            assert getattr(ops, op)(a, b, out, implementation_index=index) is out
            assert torch.equal(out, ref), (index, a_shape, b_shape)
    small = torch.tensor([torch.iinfo(dtype).max, torch.iinfo(dtype).min], dtype=dtype)
    assert torch.equal(getattr(ops, op)(small, small), torch_op(small, small))
    with pytest.raises(TypeError, match="other"):
        getattr(ops, op)(small, small.to(torch.int16 if dtype != torch.int16 else torch.int8))


@params("cast", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_cast(dtype, index, layout):
    x = make((ROWS, COLS), torch.float32, layout, low=-100, high=100)
    got = ops.cast(x, dtype=dtype, implementation_index=index)
    ref = x.to(dtype) if dtype.is_floating_point else x.trunc().to(dtype)
    assert got.dtype == dtype
    assert torch.equal(got, ref)


def test_cast_float8_round_trip():
    x = torch.tensor([0.0, 1.0, -3.3, 500.0, -1e4, 0.0625])
    f8 = ops.cast(x, dtype="float8_e4m3fn")
    assert f8.dtype == torch.uint8
    back = ops.cast(f8, torch.empty(6), input_dtype="float8_e4m3fn")
    assert back.tolist() == [0.0, 1.0, -3.25, 448.0, -448.0, 0.0625]


@params("cat")
def test_cat(dtype, index, layout):
    a, b = make((ROWS, COLS), dtype, layout), make((ROWS, 3), dtype, seed=1)
    got = ops.cat([a, b], dim=-1, implementation_index=index)
    assert torch.equal(got, torch.cat([a, b], dim=-1))
    got0 = ops.cat((a, a), 0, implementation_index=index)
    assert torch.equal(got0, torch.cat([a, a], dim=0))


@params("embedding")
def test_embedding(dtype, index, layout):
    weight = make((11, COLS), dtype, layout)
    ids = torch.tensor([[0, 10, 3], [3, 3, 1]], dtype=torch.int64)
    got = ops.embedding(ids, weight, implementation_index=index)
    assert torch.equal(got, F.embedding(ids, weight))
    got32 = ops.embedding(ids.int(), weight, implementation_index=index)
    assert torch.equal(got32, F.embedding(ids, weight))


def rms_ref(x, w, eps):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.float()


@params("rms_norm")
def test_rms_norm(dtype, index, layout):
    x, w = make((ROWS, COLS), dtype, layout), make((COLS,), dtype, seed=1)
    got = ops.rms_norm(x, w, 1e-6, implementation_index=index)
    assert_close(got, rms_ref(x, w, 1e-6).to(dtype).float(), dtype)
    norm = ops.RmsNorm(x, w, eps=1e-6, implementation_index=index)
    assert_close(norm(x, w), rms_ref(x, w, 1e-6).to(dtype).float(), dtype)


@params("add_rms_norm")
def test_add_rms_norm(dtype, index, layout):
    x, r = make((ROWS, COLS), dtype, layout), make((ROWS, COLS), dtype, layout, seed=2)
    w = make((COLS,), dtype, seed=1)
    s = (x.float() + r.float()).to(dtype)
    out, res = torch.empty_like(s), torch.empty_like(s)
    got, got_res = ops.add_rms_norm(x, r, w, 1e-5, out, res, implementation_index=index)
    assert got is out and got_res is res
    assert torch.equal(res, s)
    assert_close(out, rms_ref(s, w, 1e-5).to(dtype).float(), dtype)
    # In place (vLLM fused_add_rms_norm): out into input, residual_out into residual.
    got, got_res = ops.add_rms_norm(x, r, w, 1e-5, implementation_index=index)
    assert got is x and got_res is r
    assert torch.equal(r, s)
    assert_close(x, rms_ref(s, w, 1e-5).to(dtype).float(), dtype)


@params("swiglu")
def test_swiglu(dtype, index, layout):
    a, g = make((ROWS, COLS), dtype, layout), make((ROWS, COLS), dtype, layout, seed=1)
    got = ops.swiglu(a, g, implementation_index=index)
    assert_close(got, (a.float() * F.silu(g.float())).to(dtype).float(), dtype)


@params("silu_and_mul")
def test_silu_and_mul(dtype, index, layout):
    x = make((ROWS, 2 * COLS), dtype, layout)
    got = ops.silu_and_mul(x, implementation_index=index)
    d = COLS
    ref = F.silu(x[..., :d].float()) * x[..., d:].float()
    assert got.shape == (ROWS, COLS)
    assert_close(got, ref.to(dtype).float(), dtype)
    y = make((4, ROWS, 3), dtype, layout)
    got0 = ops.silu_and_mul(y, dim=0, implementation_index=index)
    assert_close(got0, (F.silu(y[:2].float()) * y[2:].float()).to(dtype).float(), dtype)


@params("causal_softmax")
def test_causal_softmax(dtype, index, layout):
    s, t = 7, COLS
    x = make((2, s, t), dtype, layout)
    got = ops.causal_softmax(x, implementation_index=index)
    mask = torch.ones(s, t, dtype=torch.bool).tril(diagonal=t - s)
    ref = torch.softmax(x.float().masked_fill(~mask, float("-inf")), dim=-1)
    assert_close(got, ref.to(dtype).float(), dtype)


@params("scaled_softmax")
def test_scaled_softmax(dtype, index, layout):
    x = make((ROWS, COLS), dtype, layout)
    got = ops.scaled_softmax(x, 0.7, implementation_index=index)
    assert_close(got, torch.softmax(0.7 * x.float(), dim=-1).to(dtype).float(), dtype)
