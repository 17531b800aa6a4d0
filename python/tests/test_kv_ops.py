"""rotary_embedding, apply_rotary_pos_emb, reshape_and_cache and the samplers against torch 1.13
references (float64 math on the rounded inputs; tolerances of conftest.TOLERANCE)."""

import numpy as np
import pytest
import torch

from conftest import assert_close, make, params
from tileops import ops

T, H, HKV, D, MAX_POS = 7, 4, 2, 64, 64


def cos_sin_cache(rot, dtype=torch.float32, max_pos=MAX_POS):
    """vLLM's cache: cos(p * theta_i) then sin(p * theta_i), theta_i = 10000^(-2i/rot)."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    freqs = torch.outer(torch.arange(max_pos, dtype=torch.float64), inv_freq)
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1).to(dtype)


def rotary_ref(positions, x, head_size, cache, neox):
    """vLLM's RotaryEmbedding.forward_native in float64 for one operand."""
    rot = cache.shape[1]
    cos, sin = cache[positions.long()].double().chunk(2, dim=-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    y = x.double().reshape(x.shape[0], -1, head_size)
    rotated, rest = y[..., :rot], y[..., rot:]
    if neox:
        x1, x2 = rotated.chunk(2, dim=-1)
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    else:
        x1, x2 = rotated[..., 0::2], rotated[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2)
    return torch.cat([out, rest], dim=-1).reshape(x.shape)


@params("rotary_embedding")
@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("rot", [D, 32])
def test_rotary_embedding_out_of_place(dtype, index, layout, neox, rot):
    positions = torch.randint(0, MAX_POS, (T,), generator=torch.Generator().manual_seed(1))
    query = make((T, H * D), dtype, layout)
    key = make((T, HKV, D), dtype, layout, seed=1)
    cache = cos_sin_cache(rot, dtype)
    q_out, k_out = torch.full_like(query, float("nan")), torch.full_like(key, float("nan"))
    q_before = query.clone()
    got_q, got_k = ops.rotary_embedding(positions, query, key, D, cache, neox, rot, q_out, k_out,
                                        implementation_index=index)
    assert got_q is q_out and got_k is k_out
    assert torch.equal(query, q_before)
    assert_close(got_q, rotary_ref(positions, query, D, cache, neox), dtype)
    assert_close(got_k, rotary_ref(positions, key, D, cache, neox), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("neox", [True, False])
def test_rotary_embedding_in_place_on_qkv_views_as_vllm(dtype, neox):
    # vLLM splits the fused QKV projection into strided views and rotates q and k in place.
    qkv = make((T, (H + 2 * HKV) * D), dtype)
    q, k, v = qkv.split([H * D, HKV * D, HKV * D], dim=-1)
    positions = torch.arange(T, dtype=torch.int32) * 3
    cache = cos_sin_cache(D, torch.float32)
    expected_q = rotary_ref(positions, q, D, cache, neox)
    expected_k = rotary_ref(positions, k, D, cache, neox)
    v_before = v.clone()
    got_q, got_k = ops.rotary_embedding(positions, q, k, D, cache, neox)
    assert got_q is q and got_k is k
    assert_close(q, expected_q, dtype)
    assert_close(k, expected_k, dtype)
    assert torch.equal(v, v_before)


def test_rotary_embedding_key_none_numpy_and_errors():
    positions = np.arange(T, dtype=np.int64)
    query = np.random.default_rng(0).uniform(-2, 2, (T, 2, D)).astype(np.float32)
    cache = cos_sin_cache(D).numpy()
    expected = rotary_ref(torch.from_numpy(positions), torch.from_numpy(query), D,
                          torch.from_numpy(cache), True)
    got_q, got_k = ops.rotary_embedding(positions, query, None, D, cache)
    assert got_q is query and got_k is None
    assert_close(torch.from_numpy(query), expected, torch.float32)
    torch_q = torch.from_numpy(query.copy())
    ops.rotary_embedding(torch.from_numpy(positions), torch_q, None, D, torch.from_numpy(cache))
    ops.rotary_embedding(positions, query, None, D, cache)
    assert np.array_equal(torch_q.numpy(), query)

    bad = positions.copy()
    bad[3] = MAX_POS
    before = query.copy()
    with pytest.raises(ValueError, match="positions"):
        ops.rotary_embedding(bad, query, None, D, cache)
    assert np.array_equal(query, before)
    with pytest.raises(TypeError, match="positions"):
        ops.rotary_embedding(positions.astype(np.float32), query, None, D, cache)
    with pytest.raises(ValueError, match="query"):
        ops.rotary_embedding(positions, query, None, 48, cache)
    with pytest.raises(ValueError, match="rotary_dim"):
        ops.rotary_embedding(positions, query, None, D, cache, True, 16)
    with pytest.raises(TypeError):
        ops.rotary_embedding(positions, None, None, D, cache)


@params("apply_rotary_pos_emb")
@pytest.mark.parametrize("neox", [True, False])
def test_apply_rotary_pos_emb(dtype, index, layout, neox):
    positions = torch.randint(0, MAX_POS, (T,), generator=torch.Generator().manual_seed(2))
    cache = cos_sin_cache(32, dtype)
    cos, sin = cache[positions].chunk(2, dim=-1)
    query = make((T, H, 48), dtype, layout)
    key = make((T, HKV * 48), dtype, layout, seed=3)
    got_q, got_k = ops.apply_rotary_pos_emb(query.clone(), key.clone(), cos, sin, 48, neox,
                                            implementation_index=index)
    assert_close(got_q, rotary_ref(positions, query, 48, cache, neox), dtype)
    assert_close(got_k, rotary_ref(positions, key, 48, cache, neox), dtype)
    # Hugging Face's per-element tables: q * cos + rotate_half(q) * sin.
    if neox:
        full_cos, full_sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        q = make((T, H, 32), dtype, layout)
        rotate_half = torch.cat([-q.double()[..., 16:], q.double()[..., :16]], -1)
        ref = q.double() * full_cos.double()[:, None] + rotate_half * full_sin.double()[:, None]
        out = torch.empty_like(q)
        ops.apply_rotary_pos_emb(q, None, full_cos, full_sin, 32, True, out)
        assert_close(out, ref, dtype)
    with pytest.raises(ValueError, match="cos"):
        wide = torch.ones(T, 30, dtype=dtype)  # neither 48 (per element) nor <= 24 (halves)
        ops.apply_rotary_pos_emb(query, key, wide, wide, 48, neox)


def reshape_and_cache_ref(key, value, key_cache, value_cache, slots):
    kc, vc = key_cache.clone(), value_cache.clone()
    keep = slots >= 0
    kc.view(-1, *kc.shape[2:])[slots[keep].long()] = key[keep]
    vc.view(-1, *vc.shape[2:])[slots[keep].long()] = value[keep]
    return kc, vc


@params("reshape_and_cache")
@pytest.mark.parametrize("block_size", [16, 32])
def test_reshape_and_cache(dtype, index, layout, block_size):
    tokens, blocks = 19, 3
    key, value = make((tokens, HKV, D), dtype, layout), make((tokens, HKV, D), dtype, layout, seed=1)
    slots = torch.randperm(blocks * block_size, generator=torch.Generator().manual_seed(3))[:tokens]
    slots[::5] = -1
    key_cache = make((blocks, block_size, HKV, D), dtype, seed=4)
    value_cache = make((blocks, block_size, HKV, D), dtype, seed=5)
    ref_k, ref_v = reshape_and_cache_ref(key, value, key_cache, value_cache, slots)
    assert ops.reshape_and_cache(key, value, key_cache, value_cache, slots.int(),
                                 implementation_index=index) is None
    assert torch.equal(key_cache, ref_k) and torch.equal(value_cache, ref_v)
    kv = torch.stack([make((blocks, block_size, HKV, D), dtype, seed=s) for s in (6, 7)])
    ref_k, ref_v = reshape_and_cache_ref(key, value, kv[0], kv[1], slots)
    ops.reshape_and_cache(key, value, kv, slots)
    assert torch.equal(kv[0], ref_k) and torch.equal(kv[1], ref_v)

    bad = slots.clone()
    bad[-1] = blocks * block_size
    before = key_cache.clone()
    with pytest.raises(ValueError, match="slot_mapping"):
        ops.reshape_and_cache(key, value, key_cache, value_cache, bad)
    assert torch.equal(key_cache, before)
    with pytest.raises(TypeError, match="slot_mapping"):
        ops.reshape_and_cache(key, value, key_cache, value_cache, slots.float())
    with pytest.raises(ValueError, match="kv_cache"):
        ops.reshape_and_cache(key, value, key_cache, slots)


@params("top_k_top_p_sampler")
def test_sampler_k1_is_argmax_and_seeded(dtype, index, layout):
    logits = make((6, 301), dtype, layout, low=-5, high=5)
    got = ops.top_k_top_p_sampler(logits, 1, None, implementation_index=index)
    assert got.dtype == torch.int64 and got.shape == (6,)
    # torch.argmax returns the first maximum, as the sampler's tie rule (lower index first).
    assert torch.equal(got, torch.tensor([int(np.argmax(r)) for r in logits.float().numpy()]))
    a = ops.top_k_top_p_sampler(logits, 40, 0.9, seed=11)
    b = ops.top_k_top_p_sampler(logits.clone(), torch.tensor([40] * 6), torch.tensor([0.9] * 6),
                                seed=11)
    assert torch.equal(a, b)
    probs = torch.softmax(logits.double(), -1).float()
    c = ops.topk_topp_sampling(probs, 1, 1.0, seed=3, implementation_index=index)
    assert c.dtype == torch.int32 and torch.equal(c.long(), got)


def test_sampler_matches_torch_softmax_and_top_p_set():
    torch_probs = torch.tensor([0.1, 0.35, 0.05, 0.3, 0.2])
    logits = torch_probs.log()[None].expand(20000, 5)  # one row repeated (stride 0)
    counts = torch.bincount(ops.top_k_top_p_sampler(logits, seed=5), minlength=5).double()
    expected = torch_probs.double() * 20000
    assert ((counts - expected) ** 2 / expected).sum() < 18.47  # chi-square, 4 dof, 99.9%
    # p = 0.6: 0.35 < 0.6 <= 0.65, so the nucleus is {1, 3} with the boundary token 3.
    nucleus = torch.bincount(ops.top_k_top_p_sampler(logits, None, 0.6, seed=6), minlength=5)
    assert nucleus[[0, 2, 4]].sum() == 0 and nucleus[1] > 0 and nucleus[3] > 0
    numpy_tokens = ops.top_k_top_p_sampler(logits.numpy(), 2, 0.9, seed=7)
    assert isinstance(numpy_tokens, np.ndarray) and numpy_tokens.dtype == np.int64
    assert np.array_equal(numpy_tokens, ops.top_k_top_p_sampler(logits, 2, 0.9, seed=7).numpy())


def test_sampler_generator_gives_fresh_reproducible_draws():
    logits = torch.zeros(64, 1000)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a1, a2 = ops.top_k_top_p_sampler(logits, generator=g1), ops.top_k_top_p_sampler(logits,
                                                                                     generator=g1)
    b1 = ops.top_k_top_p_sampler(logits, generator=g2)
    assert torch.equal(a1, b1) and not torch.equal(a1, a2)


def test_sampler_errors():
    logits = torch.randn(3, 10)
    with pytest.raises(ValueError, match="'p'"):
        ops.top_k_top_p_sampler(logits, None, 0.0)
    with pytest.raises(ValueError, match="'k'"):
        ops.top_k_top_p_sampler(logits, torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="'out'"):
        ops.top_k_top_p_sampler(logits, out=torch.empty(3, dtype=torch.int16))
    with pytest.raises(TypeError, match="'out'"):
        ops.topk_topp_sampling(torch.rand(3, 10), 0, 1.0, out=torch.empty(3, dtype=torch.int16))
    bad = logits.clone()
    bad[1, 4] = float("nan")
    with pytest.raises(ValueError, match="logits"):
        ops.top_k_top_p_sampler(bad)
    with pytest.raises(ValueError, match="probs"):
        ops.topk_topp_sampling(-torch.rand(3, 10), 0, 1.0)
    with pytest.raises(ValueError, match="logits"):
        ops.top_k_top_p_sampler(torch.randn(10))


@pytest.mark.parametrize("width", [torch.int32, torch.int64])
def test_samplers_write_tokens_of_either_width(width):
    """InfiniOps writes int32 tokens, torch int64: out may be either (strided too); an omitted out
    keeps each sampler's default (int64 from logits, int32 from probs)."""
    logits = make((7, 301), torch.float32, low=-4, high=4)
    probs = torch.softmax(logits.double(), -1).float()
    ref = ops.top_k_top_p_sampler(logits, 30, 0.9, seed=5)
    ref_p = ops.topk_topp_sampling(probs, 30, 0.9, seed=5)
    assert ref.dtype == torch.int64 and ref_p.dtype == torch.int32
    for out in (torch.full((7,), -1, dtype=width), torch.full((14,), -1, dtype=width)[::2]):
        got = ops.top_k_top_p_sampler(logits, 30, 0.9, out, seed=5)
        assert got is out and torch.equal(out.long(), ref)
        out.fill_(-1)
        assert ops.topk_topp_sampling(probs, 30, 0.9, out, seed=5) is out
        assert torch.equal(out.long(), ref_p.long())
        sampler = ops.TopKTopPSampler(logits, 30, 0.9, out)
        out.fill_(-1)
        assert sampler(logits, 30, 0.9, out, seed=5) is out and torch.equal(out.long(), ref)
        sampling = ops.TopkToppSampling(probs, 30, 0.9, out)
        out.fill_(-1)
        assert sampling(probs, out, seed=5) is out and torch.equal(out.long(), ref_p.long())
    # A per-row int64 k beyond int32 is read whole (>= V: off), not as its low half (1: argmax).
    far_k = torch.tensor([(1 << 32) + 1] * 7)
    assert torch.equal(ops.top_k_top_p_sampler(logits, far_k, None, seed=8),
                       ops.top_k_top_p_sampler(logits, None, None, seed=8))
    assert not torch.equal(ops.top_k_top_p_sampler(logits, far_k, None, seed=8),
                           logits.argmax(-1))


def test_int64_indices_beyond_int32_are_refused():
    """positions and slot_mapping whose low 32 bits are valid are still out of range."""
    big = 1 << 32
    query = make((T, 2 * D), torch.float32)
    before = query.clone()
    positions = torch.arange(T)
    positions[2] = big + 1
    with pytest.raises(ValueError, match="positions"):
        ops.rotary_embedding(positions, query, None, D, cos_sin_cache(D))
    assert torch.equal(query, before)
    key = make((3, HKV, D), torch.float32)
    kc, vc = torch.zeros(2, 16, HKV, D), torch.zeros(2, 16, HKV, D)
    for far in (big + 3, big - 1):  # low halves: 3, and -1 (skip)
        with pytest.raises(ValueError, match="slot_mapping"):
            ops.reshape_and_cache(key, key, kc, vc, torch.tensor([0, far, 5]))
    assert not kc.any() and not vc.any()
    weight = make((10, 4), torch.float32)
    with pytest.raises(ValueError, match="input_ids"):
        ops.embedding(torch.tensor([1, big + 2]), weight)


def test_class_forms_on_new_data():
    cache = cos_sin_cache(D)
    positions = torch.arange(T)
    q, k = make((T, H * D), torch.float32), make((T, HKV * D), torch.float32, seed=1)
    rope = ops.RotaryEmbedding(positions, q, k, D, cache, True)
    for seed in range(2):
        q2, k2 = make((T, H * D), torch.float32, seed=seed + 5), make((T, HKV * D), torch.float32)
        expected = rotary_ref(positions.flip(0), q2, D, cache, True)
        got_q, got_k = rope(positions.flip(0).contiguous(), q2, k2, cache)
        assert got_q is q2 and got_k is k2
        assert_close(q2, expected, torch.float32)
    with pytest.raises(ValueError):
        rope(positions, make((T, 2 * D), torch.float32), k, cache)

    key, value = make((4, HKV, D), torch.float16), make((4, HKV, D), torch.float16, seed=1)
    kc, vc = torch.zeros(2, 16, HKV, D, dtype=torch.float16), torch.zeros(2, 16, HKV, D,
                                                                           dtype=torch.float16)
    slots = torch.tensor([3, -1, 31, 0])
    cache_op = ops.ReshapeAndCache(key, value, kc, vc, slots)
    ref_k, ref_v = reshape_and_cache_ref(key, value, kc, vc, slots)
    cache_op(key, value, kc, vc, slots)
    assert torch.equal(kc, ref_k) and torch.equal(vc, ref_v)

    logits = torch.randn(5, 100)
    sampler = ops.TopKTopPSampler(logits, 1)
    assert torch.equal(sampler(logits, 1, seed=3), logits.argmax(-1))
    probs = torch.softmax(logits, -1)
    sampling = ops.TopkToppSampling(probs, 20, 0.8)
    assert torch.equal(sampling(probs, seed=4), ops.topk_topp_sampling(probs, 20, 0.8, seed=4))


POS, Q, KC = torch.arange(4), torch.ones(4, 2, 8), torch.zeros(2, 16, 2, 8)
KV_OPS = [
    lambda t: ops.rotary_embedding(t, Q.clone(), None, 8, cos_sin_cache(8)),
    lambda t: ops.rotary_embedding(POS, t, None, 8, cos_sin_cache(8)),
    lambda t: ops.rotary_embedding(POS, Q.clone(), t, 8, cos_sin_cache(8)),
    lambda t: ops.apply_rotary_pos_emb(Q.clone(), None, t, t, 8),
    lambda t: ops.reshape_and_cache(t, t, KC.clone(), KC.clone(), POS),
    lambda t: ops.reshape_and_cache(Q, Q, KC.clone(), KC.clone(), t),
    lambda t: ops.top_k_top_p_sampler(t, 2, 0.5),
    lambda t: ops.top_k_top_p_sampler(torch.ones(4, 8), t, t),
    lambda t: ops.topk_topp_sampling(t, 2, 0.5),
]


@pytest.mark.parametrize("bad", [None, 3, "x", object(), [1.0, 2.0], torch.ones(0, 8),
                                 torch.ones(8, 8)[:, ::3], torch.ones(8, 16).t()], ids=repr)
@pytest.mark.parametrize("op", range(len(KV_OPS)))
def test_no_segfault(op, bad):
    try:
        KV_OPS[op](bad)
    except (ValueError, TypeError, NotImplementedError):
        pass


def test_four_python_threads():
    import threading
    logits = [torch.randn(16, 500) for _ in range(4)]
    results = [None] * 4

    def work(i):
        for _ in range(20):
            results[i] = ops.top_k_top_p_sampler(logits[i], 1, 0.9, seed=i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert torch.equal(results[i], logits[i].argmax(-1))
