"""tileops.infini's dense operators (elementwise, cast, cat, matmul, gemm, linear, norms,
activations, softmax, embedding): the InfiniOps forms (argument order, keywords, overloads,
defaults, stream=0) against tileops.ops and torch 1.13 references (float64 math;
conftest.TOLERANCE), with bad inputs."""

import numpy as np
import pytest
import torch

from conftest import FLOATS, LAYOUTS, assert_close, make, poisoned
from tileops import infini
from tileops import ops


# ---- elementwise, cast, cat ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["add", "mul"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_mul(name, dtype, layout):
    x, y = make((5, 33), dtype, layout, seed=1), make((5, 33), dtype, layout, seed=2)
    out = poisoned((5, 33), dtype, layout)
    assert getattr(infini, name)(x, y, out, stream=0) is None
    assert torch.equal(out, getattr(ops, name)(x, y))
    ref = x.double() + y.double() if name == "add" else x.double() * y.double()
    assert_close(out, ref, dtype)
    # Keywords by InfiniOps' names, broadcasting into a materialized out.
    out2 = poisoned((5, 33), dtype)
    getattr(infini, name)(input=x, other=y[:1], out=out2, implementation_index=0)
    assert torch.equal(out2, getattr(ops, name)(x, y[:1]))


@pytest.mark.parametrize("name", ["add", "mul"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8])
def test_add_mul_narrow_integers_wrap_as_torch(name, dtype):
    # InfiniOps tests int16; the narrow widths wrap modulo 2^n, as torch's do.
    info = torch.iinfo(dtype)
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(info.min, info.max + 1, (7, 19), generator=gen, dtype=dtype)
    y = torch.randint(info.min, info.max + 1, (19, 7), generator=gen, dtype=dtype).t()  # strided
    out = poisoned((7, 19), dtype)
    getattr(infini, name)(x, y, out, stream=0)
    assert torch.equal(out, getattr(torch, name)(x, y))


def test_add_bad_inputs():
    x = torch.ones(4)
    with pytest.raises(TypeError, match="missing argument 'out'"):
        infini.add(x, x)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        infini.add(x, x, x, x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'output'"):
        infini.add(x, x, output=x)
    with pytest.raises(TypeError, match="'other'.*float32"):
        infini.add(x, x.double(), x)
    with pytest.raises(ValueError, match="stream"):
        infini.add(x, x, x, stream=7)


@pytest.mark.parametrize("pair", [(torch.float32, torch.float16), (torch.bfloat16, torch.float32),
                                  (torch.float32, torch.int32), (torch.int64, torch.float32)])
def test_cast(pair):
    src, dst = pair
    x = make((3, 17), src, "strided", low=-50, high=50)
    out = poisoned((3, 17), dst)
    infini.cast(x, out, stream=0)
    assert torch.equal(out, ops.cast(x, torch.empty(3, 17, dtype=dst)))
    if dst.is_floating_point:
        assert torch.equal(out, x.to(dst))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOATS)
def test_cat_first_rest_form(dim, dtype):
    first = make((2, 3, 4), dtype, "strided", seed=1)
    rest = [make((2, 3, 4), dtype, seed=2), make((2, 3, 4), dtype, seed=3)]
    ref = torch.cat([first, *rest], dim)
    out = poisoned(ref.shape, dtype)
    infini.cat(first, rest, dim, out, stream=0)
    assert torch.equal(out, ref)
    assert torch.equal(out, ops.cat([first, *rest], dim))
    out2 = poisoned(ref.shape, dtype)
    infini.cat(first_input=first, rest_inputs=tuple(rest), dim=dim, out=out2)
    assert torch.equal(out2, ref)


def test_cat_bad_inputs():
    a = torch.ones(2, 3)
    with pytest.raises(ValueError, match="out"):
        infini.cat(a, [a], 0, torch.empty(3, 3))
    with pytest.raises(TypeError, match="missing argument 'out'"):
        infini.cat([a, a], 0, torch.empty(4, 3))


# ---- matmul, gemm, linear -----------------------------------------------------------------------


def op(x, trans):
    return x.transpose(-2, -1) if trans else x


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("shapes", [((4, 16), (16, 8)), ((3, 5, 16), (3, 16, 6)),
                                    ((3, 5, 16), (16, 6))])
def test_matmul(trans_a, trans_b, shapes):
    a = op(make(shapes[0], torch.float32, seed=1), trans_a)
    b = op(make(shapes[1], torch.float32, seed=2), trans_b)
    ref = op(a, trans_a).double() @ op(b, trans_b).double()
    c = poisoned(ref.shape, torch.float32)
    infini.matmul(a, b, c, trans_a, trans_b, stream=0)
    assert_close(c, ref, torch.float32)
    assert torch.equal(c, ops.matmul(a, b, None, trans_a, trans_b))
    with pytest.raises(TypeError, match="missing argument 'trans_b'"):
        infini.matmul(a, b, c, trans_a)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, True), (False, True)])
def test_gemm_forms(dtype, trans_a, trans_b):
    a = op(make((2, 6, 32), dtype, seed=1), trans_a)
    b = op(make((2, 32, 5), dtype, seed=2), trans_b)
    c0 = make((2, 6, 5), dtype, seed=3)
    prod = op(a, trans_a).double() @ op(b, trans_b).double()
    # The 7-argument form.
    c = c0.clone()
    infini.gemm(a, b, 0.5, -1.0, trans_a, trans_b, c, stream=0)
    assert torch.equal(c, ops.gemm(a, b, 0.5, -1.0, trans_a, trans_b, c0.clone()))
    assert_close(c, 0.5 * prod - c0.double(), dtype)
    if trans_a or trans_b:
        return
    # (a, b, c): InfiniOps' defaults are alpha = beta = 1, so c accumulates.
    c = c0.clone()
    infini.gemm(a, b, c)
    assert torch.equal(c, ops.gemm(a, b, 1.0, 1.0, False, False, c0.clone()))
    # (a, b, alpha, beta, c) and keywords.
    c = c0.clone()
    infini.gemm(a, b, 2.0, 0.0, c)
    assert_close(c, 2.0 * prod, dtype)
    c = c0.clone()
    infini.gemm(a, b, beta=0.0, c=c)
    assert_close(c, prod, dtype)


def test_gemm_bad_inputs():
    a = torch.ones(2, 3)
    with pytest.raises(TypeError, match="fit none of InfiniOps' forms"):
        infini.gemm(a, a.T, 1.0, torch.empty(2, 2))
    with pytest.raises(ValueError):
        infini.gemm(a, a, torch.empty(2, 2))


def linear_ref(a, b, bias, trans_a, trans_b):
    ref = op(a, trans_a).double() @ op(b, trans_b).double()
    return ref + bias.double() if bias is not None else ref


# InfiniOps' test shapes (smaller), a batched input against a 2-D weight, batched weights.
LINEAR_SHAPES = [((4, 64), (64, 32)), ((2, 4, 64), (2, 64, 32)), ((3, 8, 48), (3, 48, 16)),
                 ((2, 4, 64), (64, 32)), ((4, 64), (3, 64, 32)), ((2, 3, 4, 16), (3, 16, 8))]


@pytest.mark.parametrize("shapes", LINEAR_SHAPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_linear_six_argument_form(shapes, trans_a, trans_b, has_bias, dtype):
    # As InfiniOps' tests: the tensors are given transposed when their flag is set.
    a = op(make(shapes[0], dtype, seed=1, low=-1, high=1), trans_a)
    b = op(make(shapes[1], dtype, seed=2, low=-1, high=1), trans_b)
    ref = linear_ref(a, b, None, trans_a, trans_b)
    bias = make((ref.shape[-1],), dtype, "strided", seed=3) if has_bias else None
    if bias is not None:
        ref = ref + bias.double()
    out = poisoned(ref.shape, dtype)
    infini.linear(a, b, bias, trans_a, trans_b, out, stream=0)
    tol = {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}[dtype]
    err = (out.double() - ref).abs().max().item()
    assert err <= tol * (1 + ref.abs().max().item()), err
    # The same numbers as tileops' own operators on the same inputs.
    own = ops.matmul(a, b, None, trans_a, trans_b)
    if bias is not None:
        own = ops.add(own, bias)
    assert_close(out, own.double(), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("has_bias", [False, True])
def test_linear_input_weight_form(dtype, has_bias):
    x = make((2, 4, 64), dtype, "strided", seed=4)
    w = make((32, 64), dtype, seed=5)
    bias = make((32,), dtype, seed=6) if has_bias else None
    out = poisoned((2, 4, 32), dtype)
    infini.linear(x, w, bias, out)
    assert torch.equal(out, ops.linear(x, w, bias))
    out2 = poisoned((2, 4, 32), dtype)
    infini.linear(input=x, weight=w, bias=bias, out=out2, stream=0)
    assert torch.equal(out2, out)
    out3 = poisoned((2, 4, 32), dtype)
    infini.linear(x, w, bias, False, True, out3)
    assert torch.equal(out3, out)


def test_linear_bad_inputs():
    a, b = torch.ones(4, 8), torch.ones(8, 3)
    with pytest.raises(ValueError, match="bias"):
        infini.linear(a, b, torch.ones(5), False, False, torch.empty(4, 3))
    with pytest.raises(ValueError):
        infini.linear(a, b, None, False, False, torch.empty(4, 4))
    with pytest.raises(TypeError, match="fit none"):
        infini.linear(a, b, None, False, torch.empty(4, 3))
    # Batched weights need out's batch dims.
    with pytest.raises(ValueError, match="'out'"):
        infini.linear(a, torch.ones(2, 8, 3), torch.ones(3), False, False, torch.empty(4, 3))
    # numpy booleans bind as flags, as pybind11 binds them.
    out = poisoned((4, 3), torch.float32)
    infini.linear(a, b, None, np.bool_(False), np.bool_(False), out)
    assert torch.equal(out, torch.full((4, 3), 8.0))


# ---- norms, activations, softmax, embedding -----------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_rms_norm_forms(dtype, layout):
    x, w = make((3, 5, 64), dtype, layout, seed=1), make((64,), dtype, seed=2)
    out = poisoned(x.shape, dtype, layout)
    infini.rms_norm(x, w, 1e-5, out, stream=0)
    assert torch.equal(out, ops.rms_norm(x, w, 1e-5))
    xd = x.double()
    assert_close(out, xd / (xd.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt() * w.double(), dtype)
    # (input, weight, out): eps 1e-6.
    out2 = poisoned(x.shape, dtype)
    infini.rms_norm(x, w, out2)
    assert torch.equal(out2, ops.rms_norm(x, w, 1e-6))
    out3 = poisoned(x.shape, dtype)
    infini.rms_norm(x, w, out=out3, eps=1e-5)
    assert torch.equal(out3, out)


@pytest.mark.parametrize("dtype", FLOATS)
def test_add_rms_norm_forms(dtype):
    x, r, w = (make(s, dtype, seed=i) for i, s in enumerate([(4, 96), (4, 96), (96,)]))
    out, res_out = poisoned(x.shape, dtype), poisoned(x.shape, dtype)
    infini.add_rms_norm(x, r, w, 1e-6, out, res_out, stream=0)
    ref_out, ref_res = ops.add_rms_norm(x, r, w, 1e-6, torch.empty_like(x), torch.empty_like(x))
    assert torch.equal(out, ref_out) and torch.equal(res_out, ref_res)
    s = x.double() + r.double()
    assert_close(res_out, s, dtype)
    # The 4-argument form writes out into input and residual_out into residual (vLLM in place).
    xi, ri = x.clone(), r.clone()
    infini.add_rms_norm(xi, ri, w, 1e-6)
    assert torch.equal(xi, out) and torch.equal(ri, res_out)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_swiglu_silu_and_mul(dtype, layout):
    x, g = make((4, 40), dtype, layout, seed=1), make((4, 40), dtype, layout, seed=2)
    out = poisoned((4, 40), dtype, layout)
    infini.swiglu(x, g, out, stream=0)
    assert torch.equal(out, ops.swiglu(x, g))
    gd = g.double()
    assert_close(out, x.double() * gd * torch.sigmoid(gd), dtype)
    both = make((3, 2, 64), dtype, layout, seed=3)
    for form in [lambda o: infini.silu_and_mul(both, -1, o),
                 lambda o: infini.silu_and_mul(both, o, stream=0),
                 lambda o: infini.silu_and_mul(input=both, dim=2, out=o)]:
        o = poisoned((3, 2, 32), dtype)
        form(o)
        assert torch.equal(o, ops.silu_and_mul(both))
    o = poisoned((3, 1, 64), dtype)
    infini.silu_and_mul(both, 1, o)
    h = both.double()
    assert_close(o, (h[:, :1] * torch.sigmoid(h[:, :1]) * h[:, 1:]), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 9), (2, 4, 7)])
def test_causal_and_scaled_softmax(dtype, shape):
    x = make(shape, dtype, "strided", seed=1)
    out = poisoned(shape, dtype)
    infini.causal_softmax(x, out, stream=0)
    assert torch.equal(out, ops.causal_softmax(x))
    s, t = shape[-2], shape[-1]
    mask = torch.arange(t)[None, :] <= torch.arange(s)[:, None] + t - s
    assert_close(out, torch.softmax(x.double().masked_fill(~mask, -np.inf), -1), dtype)
    out2 = poisoned(shape, dtype)
    infini.scaled_softmax(x, 0.25, out2, stream=0)
    assert torch.equal(out2, ops.scaled_softmax(x, 0.25))
    assert_close(out2, torch.softmax(0.25 * x.double(), -1), dtype)


@pytest.mark.parametrize("ids_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding(ids_dtype, dtype):
    ids = torch.tensor([[3, 0], [9, 3], [1, 1]], dtype=ids_dtype)
    w = make((10, 24), dtype, seed=1)
    out = poisoned((3, 2, 24), dtype)
    infini.embedding(ids, w, out, stream=0)
    assert torch.equal(out, w[ids.long()])
    assert torch.equal(out, ops.embedding(ids, w))
    with pytest.raises(ValueError, match="input_ids"):
        infini.embedding(torch.tensor([10], dtype=ids_dtype), w, torch.empty(1, 24, dtype=dtype))
