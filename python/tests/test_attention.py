"""flash_attention, paged_attention and the flash-attn adapters against torch 1.13 manual
attention (softmax(q k^T * scale + mask) v in float64): varlen batches, GQA, causal with q
shorter than kv, sliding windows, paged caches, every float dtype, strided query/output, numpy
inputs, class forms and bad inputs, on every active CPU implementation (native and tl; tl over
fewer parameter combinations, conftest.spread).
Tolerances: conftest.TOLERANCE plus 4e-7 per head-size term (float32 dot products)."""

import numpy as np
import pytest
import torch

from conftest import FLOATS, LAYOUTS, TOLERANCE, make, spread
from tileops import ops

FLASH_IMPLS = ops.active_implementation_indices("flash_attention", device="cpu")
PAGED_IMPLS = ops.active_implementation_indices("paged_attention", device="cpu")


def reference(q, k, v, q_lens, kv_lens, causal=False, left=-1, right=-1, scale=None):
    """Manual attention per sequence in float64; a row that sees no key gives zeros."""
    h, d = q.shape[1], q.shape[2]
    group = h // k.shape[1]
    scale = d ** -0.5 if scale is None else scale
    out, qs, ks = [], 0, 0
    for lq, lk in zip(q_lens, kv_lens):
        qi = q[qs:qs + lq].double().transpose(0, 1)  # [H, Lq, D]
        ki = k[ks:ks + lk].double().repeat_interleave(group, 1).transpose(0, 1)
        vi = v[ks:ks + lk].double().repeat_interleave(group, 1).transpose(0, 1)
        scores = qi @ ki.transpose(1, 2) * scale
        i = torch.arange(lq)[:, None] + lk - lq
        j = torch.arange(lk)[None, :]
        visible = torch.ones(lq, lk, dtype=torch.bool)
        if causal:
            visible &= j <= i
        if left >= 0:
            visible &= j >= i - left
        if right >= 0:
            visible &= j <= i + right
        probs = torch.softmax(scores.masked_fill(~visible, float("-inf")), -1).nan_to_num(0.0)
        out.append((probs @ vi).transpose(0, 1))
        qs, ks = qs + lq, ks + lk
    return torch.cat(out)


def check(got, ref, dtype, d):
    tol = TOLERANCE[dtype] + 4e-7 * d
    err = (torch.as_tensor(got).double() - ref).abs()
    assert bool((err <= tol + TOLERANCE[dtype] * ref.abs()).all()), f"max error {err.max()}"


def cu(lens):
    return torch.tensor([0] + list(np.cumsum(lens)), dtype=torch.int32)


def paged(k, kv_lens, block_size, seed=0):
    """k [T, Hkv, D] scattered into a cache [blocks, block_size, Hkv, D] over shuffled blocks."""
    needed = [(n + block_size - 1) // block_size for n in kv_lens]
    blocks = sum(needed) + 2
    order = torch.randperm(blocks, generator=torch.Generator().manual_seed(seed))
    cache = torch.zeros(blocks, block_size, *k.shape[1:], dtype=k.dtype)
    table = torch.full((len(kv_lens), max(max(needed), 1)), -1, dtype=torch.int32)
    start, used = 0, 0
    for b, n in enumerate(kv_lens):
        for j in range(n):
            if j % block_size == 0:
                table[b, j // block_size] = order[used]
                used += 1
            cache[table[b, j // block_size], j % block_size] = k[start + j]
        start += n
    return cache, table


@pytest.mark.parametrize("impl,dtype,layout,shape", spread(FLASH_IMPLS, FLOATS, LAYOUTS,
                                                           [(4, 4, 64), (8, 2, 80), (8, 1, 128)]))
def test_flash_varlen_causal(impl, dtype, layout, shape):
    heads, kv_heads, d = shape
    q_lens, kv_lens = [1, 17, 40], [1, 17, 60]
    q = make((sum(q_lens), heads, d), dtype, layout, seed=1)
    k = make((sum(kv_lens), kv_heads, d), dtype, seed=2)
    v = make((sum(kv_lens), kv_heads, d), dtype, seed=3)
    out = torch.full((sum(q_lens), heads, 2 * d), float("nan"), dtype=dtype)[..., ::2] \
        if layout == "strided" else None
    got = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), causal=True, output=out,
                              implementation_index=impl)
    if out is not None:
        assert got is out
    check(got, reference(q, k, v, q_lens, kv_lens, causal=True), dtype, d)


@pytest.mark.parametrize("impl,block_size,dtype", spread(FLASH_IMPLS, [16, 32], FLOATS))
def test_flash_paged_equals_packed(impl, block_size, dtype):
    q_lens, kv_lens = [3, 17], [50, 129]
    q = make((sum(q_lens), 8, 64), dtype, seed=4)
    k = make((sum(kv_lens), 2, 64), dtype, seed=5)
    v = make((sum(kv_lens), 2, 64), dtype, seed=6)
    kc, table = paged(k, kv_lens, block_size)
    vc, _ = paged(v, kv_lens, block_size)
    got = ops.flash_attention(q, kc, vc, cu(q_lens), cu(kv_lens), table, causal=True,
                              implementation_index=impl)
    packed = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                                 implementation_index=impl)
    if impl == 0:  # bit for bit on native; tl's key tiles follow the blocks
        assert torch.equal(got, packed)
    ref = reference(q, k, v, q_lens, kv_lens, causal=True)
    check(got, ref, dtype, 64)
    check(packed, ref, dtype, 64)


@pytest.mark.parametrize("impl", FLASH_IMPLS)
def test_flash_sliding_window_forms(impl):
    q_lens = kv_lens = [129]
    q, k, v = (make((129, 4, 64), torch.float32, seed=s) for s in (7, 8, 9))
    ref = reference(q, k, v, q_lens, kv_lens, causal=True, left=15, right=0)
    index = {"implementation_index": impl}
    check(ops.flash_attention(q, k, v, causal=True, sliding_window=16, **index), ref,
          torch.float32, 64)
    check(ops.flash_attention(q, k, v, causal=True, window_left=15, window_right=0, **index), ref,
          torch.float32, 64)
    check(ops.flash_attention(q, k, v, window_left=15, window_right=0, sliding_window=16, **index),
          ref, torch.float32, 64)
    with pytest.raises(ValueError, match="sliding_window"):
        ops.flash_attention(q, k, v, window_left=3, sliding_window=16, **index)


@pytest.mark.parametrize("impl", FLASH_IMPLS)
def test_flash_long_sequence_and_numpy(impl):
    q, k, v = (make((1000, 2, 64), torch.float32, seed=s) for s in (10, 11, 12))
    ref = reference(q, k, v, [1000], [1000], causal=True)
    check(ops.flash_attention(q, k, v, num_heads=2, num_kv_heads=2, head_size=64, causal=True,
                              implementation_index=impl),
          ref, torch.float32, 64)
    got = ops.flash_attention(q.numpy(), k.numpy(), v.numpy(), causal=True,
                              implementation_index=impl)
    assert isinstance(got, np.ndarray)
    check(torch.from_numpy(got), ref, torch.float32, 64)


@pytest.mark.parametrize("impl,dtype,kv_heads", spread(PAGED_IMPLS, FLOATS, [8, 2, 1]))
def test_paged_attention_decode(impl, dtype, kv_heads):
    kv_lens = [1, 17, 129, 300]
    d = 128
    q = make((4, 8, d), dtype, seed=13)
    k = make((sum(kv_lens), kv_heads, d), dtype, seed=14)
    v = make((sum(kv_lens), kv_heads, d), dtype, seed=15)
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    got = ops.paged_attention(q, kc, vc, lens, table, seq_lens_host=lens, block_table_host=table,
                              implementation_index=impl)
    check(got, reference(q, k, v, [1] * 4, kv_lens), dtype, d)
    # The adapter with flash-attn's argument list, q as [B, 1, H, D] (over flash_attention).
    got = ops.mha_fwd_kvcache(q[:, None], kc, vc, seqlens_k=lens, block_table=table,
                              implementation_index=impl)
    check(got[:, 0], reference(q, k, v, [1] * 4, kv_lens), dtype, d)


@pytest.mark.parametrize("impl", PAGED_IMPLS)
def test_paged_attention_window_and_class_form(impl):
    kv_lens = [100, 40]
    q = make((2, 4, 64), torch.float32, seed=16)
    k = make((140, 2, 64), torch.float32, seed=17)
    v = make((140, 2, 64), torch.float32, seed=18)
    kc, table = paged(k, kv_lens, 32)
    vc, _ = paged(v, kv_lens, 32)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    got = ops.paged_attention(q, kc, vc, lens, table, sliding_window=20, implementation_index=impl)
    check(got, reference(q, k, v, [1, 1], kv_lens, left=19), torch.float32, 64)
    op = ops.PagedAttention(q, kc, vc, lens, table, implementation_index=impl)
    q2 = make((2, 4, 64), torch.float32, seed=19)
    check(op(q2, kc, vc, lens, table), reference(q2, k, v, [1, 1], kv_lens), torch.float32, 64)


@pytest.mark.parametrize("impl", FLASH_IMPLS)
def test_mha_varlen_fwd_and_flash_class_form(impl):
    q_lens, kv_lens = [5, 9], [20, 9]
    q = make((14, 4, 64), torch.bfloat16, seed=20)
    k = make((29, 4, 64), torch.bfloat16, seed=21)
    v = make((29, 4, 64), torch.bfloat16, seed=22)
    ref = reference(q, k, v, q_lens, kv_lens, causal=True)
    got = ops.mha_varlen_fwd(q, k, v, None, cu(q_lens), cu(kv_lens), max_seqlen_q=9,
                             max_seqlen_k=20, is_causal=True, implementation_index=impl)
    check(got, ref, torch.bfloat16, 64)
    op = ops.FlashAttention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                            implementation_index=impl)
    check(op(q, k, v, cu(q_lens), cu(kv_lens)), ref, torch.bfloat16, 64)
    with pytest.raises(NotImplementedError, match="alibi_slopes"):
        ops.mha_varlen_fwd(q, k, v, None, cu(q_lens), cu(kv_lens), alibi_slopes=q)


def test_bad_inputs():
    q = make((10, 4, 64), torch.float32)
    k = make((10, 2, 64), torch.float32)
    with pytest.raises(TypeError, match="key"):
        ops.flash_attention(q, k.half(), k)
    with pytest.raises(ValueError, match="num_kv_heads"):
        ops.flash_attention(q, k, k, num_kv_heads=3)
    with pytest.raises(ValueError, match="cu_seqlens_q"):
        ops.flash_attention(q, k, k, torch.tensor([0, 4, 9], dtype=torch.int32),
                            torch.tensor([0, 4, 10], dtype=torch.int32))
    with pytest.raises(TypeError, match="query"):
        ops.flash_attention(None, k, k)
    kc = make((4, 16, 2, 64), torch.float32)
    table = torch.tensor([[0, 1], [2, 7]], dtype=torch.int32)
    with pytest.raises(ValueError, match="block_table"):
        ops.paged_attention(q[:2], kc, kc, torch.tensor([5, 20], dtype=torch.int32), table)
    with pytest.raises(ValueError, match="seq_lens"):
        ops.paged_attention(q[:2], kc, kc, torch.tensor([5, 40], dtype=torch.int32), table)
    with pytest.raises(ValueError, match="output"):
        ops.paged_attention(q[:2], kc, kc, torch.tensor([5, 9], dtype=torch.int32), table,
                            output=q[:3])


WIDTHS = [torch.int32, torch.int64]


@pytest.mark.parametrize("q_width", WIDTHS)
@pytest.mark.parametrize("kv_width", WIDTHS)
@pytest.mark.parametrize("table_width", WIDTHS)
def test_index_tensors_of_either_width(q_width, kv_width, table_width):
    """cu_seqlens, block tables and seq_lens as torch users pass them: int32 or int64, mixed,
    strided (every other element); the results of the int32 call."""
    q_lens, kv_lens = [3, 9, 1], [40, 9, 17]
    q = make((13, 4, 64), torch.float32, seed=30)
    k = make((66, 2, 64), torch.float32, seed=31)
    v = make((66, 2, 64), torch.float32, seed=32)
    ref = reference(q, k, v, q_lens, kv_lens, causal=True)
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)

    def strided(t, width):
        wide = torch.stack([t, torch.full_like(t, -7)], -1).to(width)  # gaps hold garbage
        return wide[..., 0]

    cu_q, cu_kv = strided(cu(q_lens), q_width), strided(cu(kv_lens), kv_width)
    tab = strided(table, table_width)
    assert cu_q.stride(0) == 2 and tab.dtype == table_width
    check(ops.flash_attention(q, k, v, cu_q, cu_kv, causal=True), ref, torch.float32, 64)
    check(ops.flash_attention(q, kc, vc, cu_q, cu_kv, tab, causal=True), ref, torch.float32, 64)
    check(ops.mha_varlen_fwd(q, kc, vc, None, cu_q, cu_kv, block_table=tab, max_seqlen_q=9,
                             max_seqlen_k=40, is_causal=True), ref, torch.float32, 64)
    # Decode over the same caches: seq_lens of kv_width (the mirrors of the other width).
    qd = q[:3]
    lens = torch.tensor(kv_lens).to(kv_width)
    other = torch.int32 if kv_width == torch.int64 else torch.int64
    ref_d = reference(qd, k, v, [1] * 3, kv_lens)
    check(ops.paged_attention(qd, kc, vc, lens, tab), ref_d, torch.float32, 64)
    check(ops.paged_attention(qd, kc, vc, lens, tab, seq_lens_host=lens.to(other),
                              block_table_host=tab.contiguous()), ref_d, torch.float32, 64)
    check(ops.mha_fwd_kvcache(qd[:, None], kc, vc, seqlens_k=lens, block_table=tab)[:, 0], ref_d,
          torch.float32, 64)


def test_int64_indices_beyond_int32_are_refused():
    """An int64 index whose low 32 bits are valid is out of range, not truncated."""
    big = 1 << 32
    q = make((12, 4, 64), torch.float32, seed=33)
    k = make((12, 1, 64), torch.float32, seed=34)
    out = torch.full_like(q, 7.0)
    with pytest.raises(ValueError, match="cu_seqlens_q"):
        ops.flash_attention(q, k, k, torch.tensor([0, big + 5, 12]), torch.tensor([0, 5, 12]),
                            output=out)
    with pytest.raises(ValueError, match="cu_seqlens_kv"):
        ops.flash_attention(q, k, k, torch.tensor([0, 5, 12]), torch.tensor([0, 5, big + 12]),
                            output=out)
    kc, table = paged(k, [5, 7], 16)
    far_table = table.long()
    far_table[1, 0] += big
    with pytest.raises(ValueError, match="block_table"):
        ops.flash_attention(q, kc, kc, torch.tensor([0, 5, 12]), torch.tensor([0, 5, 12]),
                            far_table, output=out)
    with pytest.raises(ValueError, match="seq_lens"):
        ops.paged_attention(q[:2], kc, kc, torch.tensor([5, big + 7]), table, output=out[:2])
    with pytest.raises(ValueError, match="block_table"):
        ops.paged_attention(q[:2], kc, kc, torch.tensor([5, 7]), far_table, output=out[:2])
    with pytest.raises(ValueError, match="cache_seqlens|seqlens_k"):
        ops.mha_fwd_kvcache(q[:2, None], kc, kc, seqlens_k=torch.tensor([big + 5, 7]),
                            block_table=table)
    assert bool((out == 7.0).all())
    with pytest.raises(TypeError, match="cu_seqlens_q"):
        ops.flash_attention(q, k, k, torch.tensor([0, 5, 12], dtype=torch.int16),
                            torch.tensor([0, 5, 12]))
