"""tileops.infini's rotary embedding and reshape_and_cache: the InfiniOps forms against tileops.ops
and torch 1.13 references (float64 math; conftest.TOLERANCE), with bad inputs."""

import pytest
import torch

from conftest import FLOATS, assert_close, make, poisoned
from test_kv_ops import cos_sin_cache, rotary_ref
from tileops import infini
from tileops import ops


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
