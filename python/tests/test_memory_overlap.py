"""Outputs carved out of one torch buffer without sharing an element: vLLM's HND flash KV cache
([blocks, 2, H, block_size, D], key and value caches are buf[:, 0] and buf[:, 1]) is accepted by
reshape_and_cache and written in place; caches that do share memory are refused."""
import pytest
import torch

from tileops import ops

BLOCKS, HEADS, BLOCK_SIZE, HEAD_DIM, TOKENS = 3, 2, 16, 24, 29


def hnd_halves(buf):
    """buf[:, 0] and buf[:, 1] as the [blocks, block_size, H, D] caches reshape_and_cache takes."""
    return buf[:, 0].permute(0, 2, 1, 3), buf[:, 1].permute(0, 2, 1, 3)


def slot_mapping(index_dtype):
    gen = torch.Generator().manual_seed(7)
    slots = torch.randperm(BLOCKS * BLOCK_SIZE, generator=gen)[:TOKENS]
    slots[2::4] = -1
    return slots.to(index_dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_reshape_and_cache_into_hnd_halves_of_one_buffer(dtype, index_dtype):
    gen = torch.Generator().manual_seed(3)
    key = torch.randn(TOKENS, HEADS, HEAD_DIM, generator=gen).to(dtype)
    value = torch.randn(TOKENS, HEADS, HEAD_DIM, generator=gen).to(dtype)
    buf = torch.full((BLOCKS, 2, HEADS, BLOCK_SIZE, HEAD_DIM), -3.0, dtype=dtype)
    key_cache, value_cache = hnd_halves(buf)
    assert not key_cache.is_contiguous()
    slots = slot_mapping(index_dtype)
    ref = buf.clone()
    ref_k, ref_v = hnd_halves(ref)
    for t, slot in enumerate(slots.tolist()):
        if slot >= 0:
            ref_k[slot // BLOCK_SIZE, slot % BLOCK_SIZE] = key[t]
            ref_v[slot // BLOCK_SIZE, slot % BLOCK_SIZE] = value[t]
    ops.reshape_and_cache(key, value, key_cache, value_cache, slots)
    assert torch.equal(buf, ref)  # every element of the buffer: written slots and untouched rest


@pytest.mark.parametrize("shift", [HEAD_DIM, 1])
def test_reshape_and_cache_refuses_caches_that_share_memory(shift):
    key = torch.randn(TOKENS, HEADS, HEAD_DIM)
    buf = torch.full((BLOCKS, 2, HEADS, BLOCK_SIZE, HEAD_DIM), -3.0)
    key_cache, _ = hnd_halves(buf)
    shifted = buf.as_strided(key_cache.shape, key_cache.stride(), storage_offset=shift)
    before = buf.clone()
    with pytest.raises(ValueError, match=r"value_cache.*key_cache.*overlapping"):
        ops.reshape_and_cache(key, key.clone(), key_cache, shifted, slot_mapping(torch.int64))
    assert torch.equal(buf, before)
