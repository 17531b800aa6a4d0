"""swap_blocks and copy_blocks (tileops.ops, and tileops.vllm's list form) against torch
indexing: dtypes, strided caches, int32/int64 mappings, chains, bad ids refused before writing."""

import pytest
import torch

from tileops import ops
from tileops import vllm

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.uint8, torch.int64]


def _cache(blocks, dtype, seed, strided=False):
    gen = torch.Generator().manual_seed(seed)
    shape = (blocks, 3, 4, 5) if not strided else (blocks, 3, 4, 10)
    x = torch.randint(0, 100, shape, generator=gen).to(dtype)
    return x[..., ::2] if strided else x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_swap_blocks(dtype, strided, index_dtype):
    src = _cache(6, dtype, 1, strided)
    dst = _cache(9, dtype, 2, not strided)
    mapping = torch.tensor([[0, 8], [5, 0], [2, 3], [2, 4]], dtype=index_dtype)
    expected = dst.clone()
    for s, d in mapping.tolist():
        expected[d] = src[s]
    src_before = src.clone()
    assert ops.swap_blocks(src, dst, mapping) is None
    assert torch.equal(dst, expected)
    assert torch.equal(src, src_before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_copy_blocks_in_row_order(dtype, index_dtype):
    cache = _cache(8, dtype, 3, strided=True)
    # A chain (1 -> 2 -> 5), a block onto itself, a repeated destination (last wins).
    mapping = torch.tensor([[1, 2], [2, 5], [4, 4], [0, 7], [3, 7]], dtype=index_dtype)
    expected = cache.clone()
    for s, d in mapping.tolist():
        expected[d] = expected[s]
    ops.copy_blocks(cache, mapping)
    assert torch.equal(cache, expected)


def test_empty_mapping_and_transposed_mapping():
    cache = _cache(4, torch.float32, 4)
    before = cache.clone()
    ops.copy_blocks(cache, torch.empty(0, 2, dtype=torch.int64))
    assert torch.equal(cache, before)
    pairs = torch.tensor([[0, 1], [3, 2]]).t().contiguous().t()  # strides (1, 2)
    ops.copy_blocks(cache, pairs)
    assert pairs.stride() == (1, 2)
    before[1] = before[0]
    before[2] = before[3]
    assert torch.equal(cache, before)


@pytest.mark.parametrize("bad", [[[0, 9]], [[6, 0]], [[-1, 0]], [[0, 1], [0, -3]]])
def test_swap_blocks_refuses_bad_ids_before_writing(bad):
    src = _cache(6, torch.float32, 1)
    dst = _cache(9, torch.float32, 2)
    before = dst.clone()
    mapping = torch.tensor([[1, 1]] + bad)
    with pytest.raises(ValueError, match="block_mapping"):
        ops.swap_blocks(src, dst, mapping)
    assert torch.equal(dst, before)


def test_bad_arguments():
    src = _cache(6, torch.float32, 1)
    dst = _cache(9, torch.float32, 2)
    good = torch.tensor([[0, 1]])
    with pytest.raises(ValueError, match="block_mapping"):
        ops.swap_blocks(src, dst, torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match="block_mapping"):
        ops.swap_blocks(src, dst, torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="block_mapping"):
        ops.swap_blocks(src, dst, good.float())
    with pytest.raises(TypeError, match="dst"):
        ops.swap_blocks(src, dst.half(), good)
    with pytest.raises(ValueError, match="dst"):
        ops.swap_blocks(src, torch.zeros(9, 3, 4, 6), good)
    with pytest.raises(ValueError, match="dst"):  # one buffer as both
        ops.swap_blocks(src, src, good)
    with pytest.raises(ValueError, match="block_mapping"):
        ops.copy_blocks(dst, torch.tensor([[0, 9]]))
    with pytest.raises(ValueError, match="block_mapping"):
        ops.copy_blocks(torch.zeros(0, 4), torch.tensor([[0, 0]]))


def test_class_forms_check_ids_on_every_call():
    cache = _cache(5, torch.float16, 5)
    op = ops.CopyBlocks(cache, torch.tensor([[0, 1]]))
    op(cache, torch.tensor([[2, 3]]))
    assert torch.equal(cache[3], cache[2])
    before = cache.clone()
    with pytest.raises(ValueError, match="block_mapping"):
        op(cache, torch.tensor([[2, 5]]))
    assert torch.equal(cache, before)
    src, dst = _cache(5, torch.float16, 6), _cache(5, torch.float16, 7)
    swap = ops.SwapBlocks(src, dst, torch.tensor([[0, 1]]))
    swap(src, dst, torch.tensor([[4, 0]]))
    assert torch.equal(dst[0], src[4])
    with pytest.raises(ValueError, match="block_mapping"):
        swap(src, dst, torch.tensor([[5, 0]]))


def test_vllm_list_form():
    keys = [_cache(6, torch.bfloat16, s) for s in range(3)]
    values = [_cache(6, torch.bfloat16, 10 + s) for s in range(3)]
    mapping = torch.tensor([[0, 3], [5, 1]], dtype=torch.int64)
    expected = [c.clone() for c in keys + values]
    for e in expected:
        for s, d in mapping.tolist():
            e[d] = e[s]
    assert vllm.copy_blocks(keys, values, mapping) is None
    for got, e in zip(keys + values, expected):
        assert torch.equal(got, e)
    before = [c.clone() for c in keys + values]
    with pytest.raises(ValueError, match="block_mapping"):
        vllm.copy_blocks(keys, values, torch.tensor([[0, 6]]))
    with pytest.raises(ValueError, match="key_caches"):
        vllm.copy_blocks(keys[:2] + [_cache(7, torch.bfloat16, 0)], values, mapping)
    with pytest.raises(ValueError, match="value_caches"):
        vllm.copy_blocks(keys, values[:2], mapping)
    for got, b in zip(keys + values, before):
        assert torch.equal(got, b)
    src, dst = _cache(4, torch.float32, 1), _cache(4, torch.float32, 2)
    vllm.swap_blocks(src, dst, torch.tensor([[3, 0]]))
    assert torch.equal(dst[0], src[3])
