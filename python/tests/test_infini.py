"""tileops.infini, InfiniOps' Python surface: every operator's InfiniOps forms (argument order,
keywords, overloads, defaults, stream=0, class methods) against tileops.ops on the same inputs
and against torch 1.13 references (float64 math; conftest.TOLERANCE), with bad inputs."""

import numpy as np
import pytest
import torch

from conftest import FLOATS, LAYOUTS, assert_close, make
from test_attention import check as check_attention, cu, paged, reference as attention_ref
from test_kv_ops import cos_sin_cache, rotary_ref
from tileops import infini
from tileops import ops

NAN = float("nan")


def poisoned(shape, dtype, layout="contiguous"):
    """An output full of NaN (or -7 for integers), strided when asked."""
    fill = NAN if dtype.is_floating_point else -7
    wide = list(shape)
    if layout == "strided":
        wide[-1] *= 2
    out = torch.full(wide, fill, dtype=dtype)
    return out[..., ::2] if layout == "strided" else out


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


# ---- rotary embedding ---------------------------------------------------------------------------

T, H, HKV, D, MAX_POS = 7, 4, 2, 64, 64


def positions():
    return torch.randint(0, MAX_POS, (T,), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("rot", [D, 32])
def test_rotary_embedding_infiniops_order(dtype, neox, rot):
    pos, cache = positions(), cos_sin_cache(rot, dtype)
    query, key = make((T, H * D), dtype, seed=2), make((T, HKV, D), dtype, seed=3)
    q_out, k_out = poisoned(query.shape, dtype), poisoned(key.shape, dtype)
    q_before = query.clone()
    # (positions, query, key, head_size, cos_sin_cache, is_neox_style, rotary_dim, outs).
    assert infini.rotary_embedding(pos, query, key, D, cache, neox, rot, q_out, k_out,
                                   stream=0) is None
    assert torch.equal(query, q_before)
    ref_q, ref_k = ops.rotary_embedding(pos, query, key, D, cache, neox, rot,
                                        torch.empty_like(query), torch.empty_like(key))
    assert torch.equal(q_out, ref_q) and torch.equal(k_out, ref_k)
    assert_close(q_out, rotary_ref(pos, query, D, cache, neox), dtype)
    # Omitted outputs: in place (vLLM).
    qi, ki = query.clone(), key.clone()
    infini.rotary_embedding(pos, qi, ki, D, cache, neox, rot)
    assert torch.equal(qi, q_out) and torch.equal(ki, k_out)


@pytest.mark.parametrize("neox", [True, False])
def test_rotary_embedding_batched_positions(neox):
    # vLLM's batched form: positions [batch, seq], query [batch, seq, H*D], key [batch, seq, H, D];
    # the same tokens flattened give the same rotation.
    n = 6  # 2 sequences of 3 tokens
    pos, cache = positions()[:n], cos_sin_cache(D, torch.float32)
    query, key = make((n, H * D), torch.float32, seed=4), make((n, HKV, D), torch.float32, seed=5)
    flat_q, flat_k = query.clone(), key.clone()
    infini.rotary_embedding(pos, flat_q, flat_k, D, cache, neox, D)
    batched_q, batched_k = query.clone().view(2, 3, H * D), key.clone().view(2, 3, HKV, D)
    infini.rotary_embedding(pos.view(2, 3), batched_q, batched_k, D, cache, neox, D, stream=0)
    assert torch.equal(batched_q.view(n, H * D), flat_q)
    assert torch.equal(batched_k.view(n, HKV, D), flat_k)
    assert not torch.equal(flat_q, query)  # it rotated


def pre_gathered_cache(cache, pos, neox):
    """InfiniOps' [2T, head_size] table: per-token cos rows, then sin rows, expanded per element."""
    cos, sin = cache[pos].chunk(2, dim=-1)
    if neox:
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    else:
        cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
    return torch.cat([cos, sin], 0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("rank", [2, 3])
def test_rotary_embedding_pre_gathered(dtype, neox, rank):
    pos, cache = positions(), cos_sin_cache(D, dtype)
    table = pre_gathered_cache(cache, pos, neox)
    q_shape, k_shape = ((T, H * D), (T, HKV * D)) if rank == 2 else ((T, H, D), (T, HKV, D))
    query, key = make(q_shape, dtype, seed=4), make(k_shape, dtype, seed=5)
    q_out, k_out = poisoned(q_shape, dtype), poisoned(k_shape, dtype)
    # As InfiniOps' test: positions are 0..T-1 and not read.
    infini.rotary_embedding(torch.arange(T), query, key, D, table, neox, D, q_out, k_out, True,
                            stream=0)
    ref_q, ref_k = ops.rotary_embedding(pos, query, key, D, cache, neox, D,
                                        torch.empty_like(query), torch.empty_like(key))
    assert_close(q_out, ref_q.double(), dtype)
    assert_close(k_out, ref_k.double(), dtype)
    # In place, keyword.
    qi, ki = query.clone(), key.clone()
    infini.rotary_embedding(pos, qi, ki, D, table, neox, D, pre_gathered=True)
    assert torch.equal(qi, q_out) and torch.equal(ki, k_out)


def test_rotary_embedding_bad_inputs():
    pos, cache = positions(), cos_sin_cache(D)
    query, key = make((T, H * D), torch.float32), make((T, HKV * D), torch.float32)
    with pytest.raises(ValueError, match="rotary_dim"):
        infini.rotary_embedding(pos, query, key, D, pre_gathered_cache(cache, pos, True), True,
                                32, pre_gathered=True)
    with pytest.raises(ValueError, match="cos_sin_cache"):
        infini.rotary_embedding(pos, query, key, D, cache[:T], True, D, pre_gathered=True)
    with pytest.raises(TypeError, match="cos_sin_cache"):
        infini.rotary_embedding(pos, query, key, D, None, True, D, pre_gathered=True)
    with pytest.raises(TypeError, match="missing argument 'rotary_dim'"):
        infini.rotary_embedding(pos, query, key, D, cache, True)
    with pytest.raises(ValueError, match="positions"):
        infini.rotary_embedding(torch.tensor([0, 1, MAX_POS] + [0] * (T - 3)), query, key, D,
                                cache, True, D)


def test_rotary_embedding_key_omitted_by_keyword():
    # pybind11 lets a caller skip InfiniOps' optional key and name the arguments after it.
    pos, cache = positions(), cos_sin_cache(D)
    query = make((T, H * D), torch.float32)
    q_out = poisoned(query.shape, torch.float32)
    infini.rotary_embedding(pos, query, head_size=D, cos_sin_cache=cache, is_neox_style=True,
                            rotary_dim=D, query_out=q_out)
    assert_close(q_out, rotary_ref(pos, query, D, cache, True), torch.float32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("neox", [True, False])
def test_apply_rotary_pos_emb(dtype, neox):
    pos, cache = positions(), cos_sin_cache(D, dtype)
    table = pre_gathered_cache(cache, pos, neox)
    cos, sin = table[:T], table[T:]
    query, key = make((T, H, D), dtype, seed=6), make((T, HKV, D), dtype, seed=7)
    q_out, k_out = poisoned(query.shape, dtype), poisoned(key.shape, dtype)
    infini.apply_rotary_pos_emb(query, key, cos, sin, D, neox, q_out, k_out, stream=0)
    ref_q, ref_k = ops.apply_rotary_pos_emb(query, key, cos, sin, D, neox,
                                            torch.empty_like(query), torch.empty_like(key))
    assert torch.equal(q_out, ref_q) and torch.equal(k_out, ref_k)
    assert_close(q_out, rotary_ref(pos, query, D, cache, neox), dtype)


# ---- reshape_and_cache --------------------------------------------------------------------------


def scatter_ref(key, value, kv, slots):
    ref = kv.clone()
    bs = kv.shape[2]
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            ref[0, s // bs, s % bs] = key[t]
            ref[1, s // bs, s % bs] = value[t]
    return ref


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("block_size", [4, 16])
def test_reshape_and_cache_combined(dtype, block_size):
    key, value = make((6, HKV, D), dtype, seed=1), make((6, HKV, D), dtype, seed=2)
    kv = make((2, 5, block_size, HKV, D), dtype, seed=3)
    # int64 slots with padding (-1), as InfiniOps' graph-padded decode test.
    slots = torch.tensor([3, -1, 0, 2 * block_size + 1, -1, 4 * block_size + 3])
    ref = scatter_ref(key, value, kv, slots)
    # kv_cache and kv_cache_out are one tensor (InfiniOps' tests).
    infini.reshape_and_cache(key, value, kv, slots, kv, stream=0)
    assert torch.equal(kv, ref)
    # Against tileops' two-cache form on the same inputs, int32 slots.
    own = make((2, 5, block_size, HKV, D), dtype, seed=3)
    ops.reshape_and_cache(key, value, own[0], own[1], slots.int())
    assert torch.equal(own, ref)


def test_reshape_and_cache_kv_cache_as_a_view_of_vllm_flash_layout():
    # One [num_blocks, 2, block_size, Hkv, D] buffer seen as InfiniOps' [2, num_blocks, ...].
    key, value = make((3, HKV, D), torch.float32), make((3, HKV, D), torch.float32, seed=1)
    kv = torch.zeros(5, 2, 4, HKV, D).permute(1, 0, 2, 3, 4)
    slots = torch.tensor([0, 9, 19])
    ref = scatter_ref(key, value, kv, slots)
    infini.reshape_and_cache(key, value, kv, slots, kv)
    assert torch.equal(kv, ref)


def test_reshape_and_cache_kv_cache_as_a_view_of_vllm_hnd_layout():
    # One [num_blocks, 2, Hkv, block_size, D] buffer (vLLM's HND flash layout) seen as
    # InfiniOps' [2, num_blocks, block_size, Hkv, D]: the key and value halves interleave block by
    # block without sharing an element.
    key, value = make((3, HKV, D), torch.float32), make((3, HKV, D), torch.float32, seed=1)
    kv = torch.zeros(5, 2, HKV, 4, D).permute(1, 0, 3, 2, 4)
    slots = torch.tensor([0, 9, 19])
    ref = scatter_ref(key, value, kv, slots)
    infini.reshape_and_cache(key, value, kv, slots, kv)
    assert torch.equal(kv, ref)


def test_reshape_and_cache_separate_out_and_errors():
    key, value = make((2, HKV, D), torch.float32), make((2, HKV, D), torch.float32, seed=1)
    kv_in = torch.zeros(2, 3, 4, HKV, D)
    kv_out = torch.full((2, 3, 4, HKV, D), 5.0)
    slots = torch.tensor([1, 6], dtype=torch.int32)
    infini.reshape_and_cache(key, value, kv_in, slots, kv_out)
    # The scatter goes into kv_cache_out; everything else there stays, kv_cache is not written.
    assert torch.equal(kv_out, scatter_ref(key, value, torch.full_like(kv_out, 5.0), slots))
    assert not kv_in.any()
    with pytest.raises(ValueError, match="kv_cache"):
        infini.reshape_and_cache(key, value, torch.zeros(2, 3, 8, HKV, D), slots, kv_out)
    with pytest.raises(TypeError, match="kv_cache"):
        infini.reshape_and_cache(key, value, kv_in.half(), slots, kv_out)
    with pytest.raises(ValueError, match="slot_mapping"):
        infini.reshape_and_cache(key, value, kv_out, torch.tensor([0, 12]), kv_out)


# ---- attention ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (8, 2)])
def test_flash_attention_infiniops_order(dtype, heads, kv_heads):
    q_lens, kv_lens = [3, 17], [3, 30]
    q = make((20, heads, 64), dtype, seed=1)
    k, v = make((33, kv_heads, 64), dtype, seed=2), make((33, kv_heads, 64), dtype, seed=3)
    scale = 64 ** -0.5
    out = poisoned(q.shape, dtype)
    # output comes before sliding_window in InfiniOps' order.
    infini.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), None, heads, kv_heads, 64, scale,
                           True, -1, -1, 0, out, stream=0)
    assert torch.equal(out, ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                                                scale=scale))
    check_attention(out, attention_ref(q, k, v, q_lens, kv_lens, causal=True), dtype, 64)
    # Paged KV: [num_blocks, block_size, Hkv, D] with a block table.
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    out2 = poisoned(q.shape, dtype)
    infini.flash_attention(q, kc, vc, cu(q_lens), cu(kv_lens), table, heads, kv_heads, 64, scale,
                           True, -1, -1, 16, out2)
    assert torch.equal(out2, out)


def test_flash_attention_sliding_window_forms():
    q = make((40, 4, 64), torch.float32, seed=4)
    k, v = make((40, 4, 64), torch.float32, seed=5), make((40, 4, 64), torch.float32, seed=6)
    lens = cu([40])
    pair, single = poisoned(q.shape, torch.float32), poisoned(q.shape, torch.float32)
    infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, 7, 0, 0, pair)
    infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, -1, -1, 0, single,
                           sliding_window=8)
    assert torch.equal(pair, single)
    check_attention(pair, attention_ref(q, k, v, [40], [40], True, 7, 0, 0.125), torch.float32,
                    64)
    both = poisoned(q.shape, torch.float32)
    infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, 7, 0, 0, both, 8)
    assert torch.equal(both, pair)
    with pytest.raises(ValueError, match="sliding_window"):
        infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, 3, 0, 0, both,
                               sliding_window=8)
    with pytest.raises(ValueError, match="num_heads"):
        infini.flash_attention(q, k, v, lens, lens, None, 3, 4, 64, 0.125, True, -1, -1, 0, both)
    # int64 cu_seqlens, as InfiniOps' own test passes them.
    wide = poisoned(q.shape, torch.float32)
    infini.flash_attention(q, k, v, lens.long(), lens.long(), None, 4, 4, 64, 0.125, True, 7, 0,
                           0, wide)
    assert torch.equal(wide, pair)


@pytest.mark.parametrize("dtype", FLOATS)
def test_paged_attention(dtype):
    kv_lens = [1, 17, 70]
    q = make((3, 8, 64), dtype, seed=7)
    k, v = make((88, 2, 64), dtype, seed=8), make((88, 2, 64), dtype, seed=9)
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    out = poisoned(q.shape, dtype)
    infini.paged_attention(q, kc, vc, lens, table, 8, 2, 64, 0.125, 16, out, stream=0)
    assert torch.equal(out, ops.paged_attention(q, kc, vc, lens, table, scale=0.125))
    check_attention(out, attention_ref(q, k, v, [1] * 3, kv_lens, scale=0.125), dtype, 64)
    out2 = poisoned(q.shape, dtype)
    infini.paged_attention(q, kc, vc, lens, table, 8, 2, 64, 0.125, 16, out2,
                           seq_lens_host=lens, block_table_host=table)
    assert torch.equal(out2, out)
    with pytest.raises(ValueError, match="block_size"):
        infini.paged_attention(q, kc, vc, lens, table, 8, 2, 64, 0.125, 8, out2)


def varlen_args(q, k, v, out, q_lens, kv_lens, table=None, num_splits=0):
    """InfiniOps' mha_varlen_fwd argument list, as its test writes it."""
    return (q, k, v, out, cu(q_lens), cu(kv_lens), None, None, table, None, max(q_lens),
            max(kv_lens), 0.0, 0.125, False, True, -1, 0, 0.0, False, None, num_splits)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("num_splits", [0, 1, 4])
def test_mha_varlen_fwd(dtype, num_splits):
    q_lens, kv_lens = [5, 9], [20, 9]
    q = make((14, 4, 64), dtype, seed=10)
    k, v = make((29, 2, 64), dtype, seed=11), make((29, 2, 64), dtype, seed=12)
    out = poisoned(q.shape, dtype)
    infini.mha_varlen_fwd(*varlen_args(q, k, v, out, q_lens, kv_lens, num_splits=num_splits),
                          stream=0)
    own = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), scale=0.125, causal=True,
                              window_left=-1, window_right=0)
    assert torch.equal(out, own)
    check_attention(out, attention_ref(q, k, v, q_lens, kv_lens, True, -1, 0, 0.125), dtype, 64)
    kc, table = paged(k, kv_lens, 8)
    vc, _ = paged(v, kv_lens, 8)
    out2 = poisoned(q.shape, dtype)
    infini.mha_varlen_fwd(*varlen_args(q, kc, vc, out2, q_lens, kv_lens, table))
    assert torch.equal(out2, out)
    with pytest.raises(TypeError, match="num_splits"):
        infini.mha_varlen_fwd(*varlen_args(q, k, v, out, q_lens, kv_lens, num_splits=1.5))
    with pytest.raises(NotImplementedError, match="alibi_slopes"):
        infini.mha_varlen_fwd(q, k, v, out, cu(q_lens), cu(kv_lens), None, None, None,
                              torch.ones(4), 9, 20, 0.0, 0.125, False, True, -1, 0, 0.0, False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mha_fwd_kvcache(dtype):
    kv_lens = [9, 40]
    q = make((2, 1, 4, 64), dtype, seed=13)
    k, v = make((49, 2, 64), dtype, seed=14), make((49, 2, 64), dtype, seed=15)
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    out = poisoned(q.shape, dtype)
    # InfiniOps' test's argument list.
    infini.mha_fwd_kvcache(q, kc, vc, None, None, lens, None, None, None, None, table, None, out,
                           0.125, True, -1, 0, 0.0, False, 0, stream=0)
    assert torch.equal(out, ops.mha_fwd_kvcache(q, kc, vc, seqlens_k=lens, block_table=table,
                                                softmax_scale=0.125, is_causal=True,
                                                window_size_right=0))
    check_attention(out[:, 0], attention_ref(q[:, 0], k, v, [1, 1], kv_lens, True, -1, 0, 0.125),
                    dtype, 64)


# ---- samplers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_top_k_top_p_sampler_peaked_rows_are_argmax(dtype):
    logits = torch.full((3, 16), -10.0, dtype=dtype)
    for i in range(3):
        logits[i, (i + 1) % 16] = 10.0
    out = torch.full((3,), -7, dtype=torch.int64)
    k, p = torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.float32)
    infini.top_k_top_p_sampler(logits, k, p, out, stream=0)
    assert out.tolist() == [1, 2, 3]
    out2 = torch.full((3,), -7, dtype=torch.int64)
    infini.top_k_top_p_sampler(logits, torch.ones(1, dtype=torch.int64), None, out2)
    assert torch.equal(out2, out)
    out3 = torch.full((3,), -7, dtype=torch.int64)
    infini.top_k_top_p_sampler(logits, out=out3)  # k and p default to None
    assert torch.equal(out3, out)


def test_top_k_top_p_sampler_writes_int32_tokens():
    # InfiniOps' contract writes int32 tokens; int64 (vLLM's) is the same draw.
    logits = make((4, 40), torch.float32, low=-1, high=1, seed=3)
    k, p = torch.full((4,), 5, dtype=torch.int64), torch.full((4,), 0.9)
    narrow = torch.full((4,), -7, dtype=torch.int32)
    wide = torch.full((4,), -7, dtype=torch.int64)
    torch.manual_seed(11)
    infini.top_k_top_p_sampler(logits, k, p, narrow, stream=0)
    torch.manual_seed(11)
    infini.top_k_top_p_sampler(logits, k, p, wide, stream=0)
    assert narrow.tolist() == wide.tolist()
    top5 = logits.topk(5, dim=-1).indices
    assert all(int(narrow[i]) in top5[i].tolist() for i in range(4))


def test_samplers_draw_from_the_global_generators():
    logits = make((4, 50), torch.float32, low=-1, high=1)
    probs = torch.softmax(logits, -1)

    def draw():
        a, b = torch.empty(4, dtype=torch.int64), torch.empty(4, dtype=torch.int32)
        infini.top_k_top_p_sampler(logits, None, None, a)
        infini.topk_topp_sampling(probs, 0, 1.0, b)
        return a, b

    torch.manual_seed(5)
    first = draw()
    torch.manual_seed(5)
    again = draw()
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    # Without a reseed, the next calls draw fresh seeds (12 draws over 50 tokens coincide
    # with probability ~1e-17).
    later = [draw() for _ in range(3)]
    assert any(not torch.equal(first[0], a) for a, _ in later)
    # numpy arrays draw from numpy's global generator.
    np.random.seed(3)
    n1 = np.empty(4, dtype=np.int64)
    infini.top_k_top_p_sampler(logits.numpy(), 5, 0.9, n1)
    np.random.seed(3)
    n2 = np.empty(4, dtype=np.int64)
    infini.top_k_top_p_sampler(logits.numpy(), 5, 0.9, n2)
    assert np.array_equal(n1, n2)
    assert set(n1.tolist()) <= set(torch.topk(logits, 5).indices.flatten().tolist())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_topk_topp_sampling(dtype):
    probs = torch.full((3, 16), 1e-3, dtype=dtype)
    for i in range(3):
        probs[i, i] = 1.0
    probs = probs / probs.sum(-1, keepdim=True)
    out = torch.full((3,), -7, dtype=torch.int32)
    infini.topk_topp_sampling(probs, 1, 1.0, out, stream=0)
    assert out.tolist() == [0, 1, 2]
    out2 = torch.full((3,), -7, dtype=torch.int32)
    infini.topk_topp_sampling(probs=probs, topk=1, topp=1.0, out=out2)
    assert torch.equal(out2, out)
    with pytest.raises(TypeError, match="missing argument 'topp'"):
        infini.topk_topp_sampling(probs, 1, out=out)


# ---- the surface: every operator, its class, streams ---------------------------------------------

# Every operator with one valid call: name -> (function building fresh arguments, outputs).
def _cases():
    f32 = torch.float32

    def elementwise():
        return (make((3, 8), f32), make((3, 8), f32, seed=1), torch.empty(3, 8)), 2

    def attention():
        q = make((5, 2, 64), f32)
        return (q, make((5, 2, 64), f32, seed=1), make((5, 2, 64), f32, seed=2), cu([5]),
                cu([5]), None, 2, 2, 64, 0.125, True, -1, -1, 0, torch.empty(5, 2, 64)), 14

    def paged_decode():
        kc, table = paged(make((9, 2, 64), f32, seed=1), [9], 4)
        return (make((1, 2, 64), f32), kc, kc.clone(), torch.tensor([9], dtype=torch.int32), table,
                2, 2, 64, 0.125, 4, torch.empty(1, 2, 64)), 10

    def kv_write():
        kv = torch.zeros(2, 3, 4, HKV, D)
        return (make((2, HKV, D), f32), make((2, HKV, D), f32, seed=1), kv, torch.tensor([0, 5]),
                kv), 4

    def rotary():
        return (positions(), make((T, H * D), f32), make((T, HKV * D), f32, seed=1), D,
                cos_sin_cache(D), True, D, torch.empty(T, H * D), torch.empty(T, HKV * D)), 7

    def apply_rotary():
        table = pre_gathered_cache(cos_sin_cache(D), positions(), True)
        return (make((T, H, D), f32), make((T, HKV, D), f32, seed=1), table[:T], table[T:], D,
                True, torch.empty(T, H, D), torch.empty(T, HKV, D)), 6

    def varlen():
        q = make((5, 2, 64), f32)
        return varlen_args(q, make((5, 2, 64), f32, seed=1), make((5, 2, 64), f32, seed=2),
                           torch.empty(5, 2, 64), [5], [5]), 3

    def kvcache():
        kc, table = paged(make((9, 2, 64), f32, seed=1), [9], 4)
        return (make((1, 1, 2, 64), f32), kc, kc.clone(), None, None,
                torch.tensor([9], dtype=torch.int32), None, None, None, None, table, None,
                torch.empty(1, 1, 2, 64), 0.125, True, -1, 0, 0.0, False, 0), 12

    return {
        "add": elementwise, "mul": elementwise, "swiglu": elementwise,
        "cast": lambda: ((make((3, 8), f32), torch.empty(3, 8, dtype=torch.float16)), 1),
        "cat": lambda: ((make((2, 3), f32), [make((2, 3), f32, seed=1)], 0, torch.empty(4, 3)), 3),
        "matmul": lambda: ((make((3, 4), f32), make((4, 5), f32), torch.empty(3, 5), False, False),
                           2),
        "gemm": lambda: ((make((3, 4), f32), make((4, 5), f32), 1.0, 0.0, False, False,
                          torch.empty(3, 5)), 6),
        "linear": lambda: ((make((3, 4), f32), make((4, 5), f32), make((5,), f32), False, False,
                            torch.empty(3, 5)), 5),
        "rms_norm": lambda: ((make((3, 8), f32), make((8,), f32), 1e-6, torch.empty(3, 8)), 3),
        "add_rms_norm": lambda: ((make((3, 8), f32), make((3, 8), f32, seed=1), make((8,), f32),
                                  1e-6, torch.empty(3, 8), torch.empty(3, 8)), (4, 5)),
        "silu_and_mul": lambda: ((make((3, 8), f32), -1, torch.empty(3, 4)), 2),
        "causal_softmax": lambda: ((make((3, 8), f32), torch.empty(3, 8)), 1),
        "scaled_softmax": lambda: ((make((3, 8), f32), 0.5, torch.empty(3, 8)), 2),
        "embedding": lambda: ((torch.tensor([1, 0, 2]), make((3, 8), f32), torch.empty(3, 8)), 2),
        "rotary_embedding": rotary,
        "apply_rotary_pos_emb": apply_rotary,
        "reshape_and_cache": kv_write,
        "flash_attention": attention,
        "paged_attention": paged_decode,
        "mha_varlen_fwd": varlen,
        "mha_fwd_kvcache": kvcache,
        "top_k_top_p_sampler": lambda: ((make((2, 9), f32), None, 0.9,
                                         torch.empty(2, dtype=torch.int64)), 3),
        "topk_topp_sampling": lambda: ((torch.softmax(make((2, 9), f32), -1), 3, 0.9,
                                        torch.empty(2, dtype=torch.int32)), 3),
    }


CASES = _cases()
CLASSES = {name: cls for name, cls in zip(infini.__all__[::2], infini.__all__[1::2])}


def test_every_operator_has_a_case_and_a_class():
    seed_list = ["add", "mul", "cast", "cat", "matmul", "gemm", "linear", "rms_norm",
                 "add_rms_norm", "swiglu", "silu_and_mul", "causal_softmax", "rotary_embedding",
                 "apply_rotary_pos_emb", "reshape_and_cache", "flash_attention",
                 "paged_attention", "topk_topp_sampling", "top_k_top_p_sampler"]
    assert set(seed_list) <= set(CASES)
    assert set(CASES) == set(CLASSES)
    for name, cls in CLASSES.items():
        assert callable(getattr(infini, name)) and isinstance(getattr(infini, cls), type)


# Outputs written only in part (the cache rows of the slots): not poisoned.
PARTIAL_OUTPUTS = {"reshape_and_cache"}


def run_case(name, call):
    """Runs a fresh case through `call`; returns its outputs (cloned)."""
    torch.manual_seed(0)
    args, outs = CASES[name]()
    for i in (outs if isinstance(outs, tuple) else (outs,)):
        if args[i].dtype.is_floating_point and name not in PARTIAL_OUTPUTS:
            args[i].fill_(NAN)
    result = call(args)
    assert result is None
    return [args[i].clone() for i in (outs if isinstance(outs, tuple) else (outs,))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_streams_and_class_form(name):
    function, cls = getattr(infini, name), getattr(infini, CLASSES[name])
    ref = run_case(name, lambda a: function(*a, stream=0))
    assert not any(torch.isnan(r.double()).any() for r in ref)
    for got in [run_case(name, lambda a: function(*a)),
                run_case(name, lambda a: function(*a, stream=None, implementation_index=0)),
                run_case(name, lambda a: cls(*a)(*a)),
                run_case(name, lambda a: cls(*a, implementation_index=0)(*a, stream=0))]:
        assert all(torch.equal(g, r) for g, r in zip(got, ref))
    with pytest.raises(ValueError, match="stream"):
        run_case(name, lambda a: function(*a, stream=7))
    with pytest.raises(ValueError, match="stream"):
        run_case(name, lambda a: cls(*a)(*a, stream=7))
    with pytest.raises(TypeError):
        cls()
    with pytest.raises(NotImplementedError, match="index 99"):
        run_case(name, lambda a: function(*a, implementation_index=99))


@pytest.mark.parametrize("name", sorted(CASES))
def test_class_methods(name):
    cls = getattr(infini, CLASSES[name])
    tileops_op = {"mha_varlen_fwd": "flash_attention",
                  "mha_fwd_kvcache": "flash_attention"}.get(name, name)
    expected = ops.active_implementation_indices(tileops_op, "cpu")
    assert cls.active_implementation_indices("cpu") == expected and expected[0] == 0
    assert cls.active_implementation_indices(torch.device("cpu")) == expected
    assert cls.active_implementation_indices("cuda") == ops.active_implementation_indices(
        tileops_op, "cuda")
    assert cls.active_implementation_indices("npu") == []
    assert cls.active_implementation_indices("ascend") == []
    with pytest.raises(ValueError, match="device"):
        cls.active_implementation_indices("tpu")
    run_case(name, lambda a: getattr(infini, name)(*a))
    assert ops.cache_size() > 0 or name in ("cat", "cast")
    cls.clear_cache()
    assert ops.cache_size() == 0


def test_numpy_arrays():
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
    out = np.full((2, 3), np.nan, np.float32)
    infini.add(x, y, out)
    assert np.array_equal(out, x + y)
    a, b = np.ones((2, 4), np.float32), np.ones((3, 2, 4), np.float32)
    bias, res = np.arange(2, dtype=np.float32), np.full((3, 2, 2), np.nan, np.float32)
    infini.linear(a, b, bias, False, True, res)  # batched weights as views of numpy arrays
    assert np.array_equal(res, np.broadcast_to(4 + bias, (3, 2, 2)))
