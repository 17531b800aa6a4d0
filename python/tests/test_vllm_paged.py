"""tileops.vllm's paged attention (v1, v2) and cache writes over vLLM's own cache layouts, and
tileops.ops.paged_attention's 5-D key cache and ALiBi slopes, against float64 torch references:
every float dtype, GQA, tails (lengths 0, 1, 17, 300), block tables with unused (-1) entries,
NaN in every cache entry no sequence uses, poisoned outputs, bad inputs."""

import pytest
import torch

from conftest import FLOATS, TOLERANCE, make, poisoned
from tileops import ops
from tileops import vllm

BLOCK = 16


def x_of(dtype):
    return 16 // torch.tensor([], dtype=dtype).element_size()


def vllm_caches(k, v, kv_lens, block_size=BLOCK, seed=0):
    """Packed k, v [T, Hkv, D] in vLLM's caches, key [blocks, Hkv, D/x, block_size, x] and value
    [blocks, Hkv, D, block_size], over shuffled blocks; every other entry NaN."""
    t_count, hkv, d = k.shape
    x = x_of(k.dtype)
    needed = [(n + block_size - 1) // block_size for n in kv_lens]
    blocks = sum(needed) + 2
    order = torch.randperm(blocks, generator=torch.Generator().manual_seed(seed))
    kc = torch.full((blocks, hkv, d // x, block_size, x), float("nan"), dtype=k.dtype)
    vc = torch.full((blocks, hkv, d, block_size), float("nan"), dtype=v.dtype)
    table = torch.full((len(kv_lens), max(max(needed), 1) + 1), -1, dtype=torch.int32)
    slots = []
    start, used = 0, 0
    for b, n in enumerate(kv_lens):
        for j in range(n):
            if j % block_size == 0:
                table[b, j // block_size] = order[used]
                used += 1
            blk, off = int(table[b, j // block_size]), j % block_size
            kc[blk, :, :, off, :] = k[start + j].reshape(hkv, d // x, x)
            vc[blk, :, :, off] = v[start + j]
            slots.append(blk * block_size + off)
        start += n
    return kc, vc, table, torch.tensor(slots)


def reference(q, k, v, kv_lens, scale, slopes=None):
    """softmax(scale * q k^T + slope_h * (j - (n - 1))) v per sequence in float64."""
    h, d = q.shape[1], q.shape[2]
    group = h // k.shape[1]
    out, start = [], 0
    for b, n in enumerate(kv_lens):
        if n == 0:
            out.append(torch.zeros(h, d, dtype=torch.float64))
            continue
        kb = k[start:start + n].double().repeat_interleave(group, 1).transpose(0, 1)  # [H, n, D]
        vb = v[start:start + n].double().repeat_interleave(group, 1).transpose(0, 1)
        scores = (kb @ q[b].double()[:, :, None])[:, :, 0] * scale  # [H, n]
        if slopes is not None:
            scores = scores + slopes.double()[:, None] * (torch.arange(n) - (n - 1)).double()
        out.append((torch.softmax(scores, -1)[:, None, :] @ vb)[:, 0])
        start += n
    return torch.stack(out)


def check(got, ref, dtype, d):
    tol = TOLERANCE[dtype] + 4e-7 * d
    err = (got.double() - ref).abs()
    assert bool((err <= tol + TOLERANCE[dtype] * ref.abs()).all()), f"max error {err.max()}"


def inputs(dtype, kv_heads, d=64, heads=8, kv_lens=(1, 17, 300, 0), seed=0):
    q = make((len(kv_lens), heads, d), dtype, seed=seed)
    k = make((sum(kv_lens), kv_heads, d), dtype, seed=seed + 1)
    v = make((sum(kv_lens), kv_heads, d), dtype, seed=seed + 2)
    return q, k, v, list(kv_lens)


def slopes_for(heads):
    s = torch.tensor([2.0 ** -(h + 1) for h in range(heads)])
    s[0] = 0.0
    return s


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kv_heads", [8, 2, 1])
@pytest.mark.parametrize("alibi", [False, True])
def test_paged_attention_v1_on_vllm_caches(dtype, kv_heads, alibi):
    q, k, v, kv_lens = inputs(dtype, kv_heads, d=80 if kv_heads == 2 else 64)
    kc, vc, table, _ = vllm_caches(k, v, kv_lens)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    slopes = slopes_for(q.shape[1]) if alibi else None
    scale = q.shape[2] ** -0.5
    out = poisoned(q.shape, dtype)
    assert vllm.paged_attention_v1(out, q, kc, vc, kv_heads, scale, table, lens, BLOCK,
                                   max(kv_lens), slopes, "auto", None, None) is None
    check(out, reference(q, k, v, kv_lens, scale, slopes), dtype, q.shape[2])
    # tileops.ops over the same caches as views in its own order, int64 indices.
    got = ops.paged_attention(q, kc.permute(0, 3, 1, 2, 4), vc.permute(0, 3, 1, 2), lens.long(),
                              table.long(), scale=scale, alibi_slopes=slopes)
    assert torch.equal(got, out)


def test_paged_attention_v2_equals_v1_and_leaves_workspaces():
    q, k, v, kv_lens = inputs(torch.bfloat16, 2, kv_lens=(600, 3))
    kc, vc, table, _ = vllm_caches(k, v, kv_lens)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    slopes = slopes_for(8)
    out1, out2 = poisoned(q.shape, q.dtype), poisoned(q.shape, q.dtype)
    vllm.paged_attention_v1(out1, q, kc, vc, 2, 0.1, table, lens, BLOCK, 600, slopes, "auto",
                            torch.ones(()), torch.ones(()))
    partitions = 2
    exp_sum = torch.full((2, 8, partitions), 7.0)
    max_logits = torch.full((2, 8, partitions), 7.0)
    tmp_out = torch.full((2, 8, partitions, 64), 7.0, dtype=q.dtype)
    vllm.paged_attention_v2(out2, exp_sum, max_logits, tmp_out, q, kc, vc, 2, 0.1, table, lens,
                            BLOCK, 600, slopes, "auto", torch.ones(()), torch.ones(()))
    assert torch.equal(out1, out2)
    check(out1, reference(q, k, v, kv_lens, 0.1, slopes), q.dtype, 64)
    assert bool((exp_sum == 7).all() and (max_logits == 7).all() and (tmp_out == 7).all())


@pytest.mark.parametrize("dtype", FLOATS)
def test_reshape_and_cache_into_vllm_caches(dtype):
    q, k, v, kv_lens = inputs(dtype, 2, kv_lens=(5, 33))
    expected_k, expected_v, table, slots = vllm_caches(k, v, kv_lens)
    kc = torch.full_like(expected_k, float("nan"))
    vc = torch.full_like(expected_v, float("nan"))
    # Padding tokens (-1) are skipped.
    keys = torch.cat([k, make((2,) + tuple(k.shape[1:]), dtype, seed=9)])
    values = torch.cat([v, make((2,) + tuple(v.shape[1:]), dtype, seed=10)])
    slot_mapping = torch.cat([slots, torch.tensor([-1, -1])]).int()
    assert vllm.reshape_and_cache(keys, values, kc, vc, slot_mapping, "auto", None, None) is None
    assert torch.equal(kc.nan_to_num(5.0), expected_k.nan_to_num(5.0))
    assert torch.equal(vc.nan_to_num(5.0), expected_v.nan_to_num(5.0))
    # And paged attention reads what was written.
    out = poisoned(q.shape, dtype)
    vllm.paged_attention_v1(out, q, kc, vc, 2, 0.125, table, torch.tensor(kv_lens), BLOCK, 33)
    check(out, reference(q, k, v, kv_lens, 0.125), dtype, 64)


@pytest.mark.parametrize("hnd", [False, True])
def test_reshape_and_cache_flash(hnd):
    key, value = make((3, 2, 64), torch.float16), make((3, 2, 64), torch.float16, seed=1)
    if hnd:  # vLLM's HND flash layout [num_blocks, Hkv, block_size, D] seen as NHD
        kc = torch.zeros(4, 2, BLOCK, 64, dtype=torch.float16).transpose(1, 2)
        vc = torch.zeros(4, 2, BLOCK, 64, dtype=torch.float16).transpose(1, 2)
    else:
        kc = torch.zeros(4, BLOCK, 2, 64, dtype=torch.float16)
        vc = torch.zeros(4, BLOCK, 2, 64, dtype=torch.float16)
    slots = torch.tensor([0, 37, -1])
    vllm.reshape_and_cache_flash(key, value, kc, vc, slots, "auto", None, None)
    assert torch.equal(kc[0, 0], key[0]) and torch.equal(kc[2, 5], key[1])
    assert torch.equal(vc[0, 0], value[0]) and torch.equal(vc[2, 5], value[1])
    assert int((kc != 0).any(-1).sum()) == 4  # 2 slots x 2 heads, nothing else


def test_bad_inputs():
    q, k, v, kv_lens = inputs(torch.float32, 2, kv_lens=(5, 9))
    kc, vc, table, slots = vllm_caches(k, v, kv_lens)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    out = poisoned(q.shape, torch.float32)
    args = (2, 0.125, table, lens, BLOCK, 9)
    with pytest.raises(NotImplementedError, match="kv_cache_dtype"):
        vllm.paged_attention_v1(out, q, kc, vc, *args, None, "fp8", 1.0, 1.0)
    with pytest.raises(NotImplementedError, match="kv_cache_dtype"):
        vllm.reshape_and_cache(k, v, kc, vc, slots, "fp8_e5m2", 1.0, 1.0)
    with pytest.raises(NotImplementedError, match="blocksparse_vert_stride"):
        vllm.paged_attention_v1(out, q, kc, vc, *args, None, "auto", 1.0, 1.0,
                                blocksparse_vert_stride=8)
    with pytest.raises(ValueError, match="'scale'"):
        vllm.paged_attention_v1(out, q, kc, vc, 2, 0.0, table, lens, BLOCK, 9)
    with pytest.raises(ValueError, match="key_cache"):
        vllm.paged_attention_v1(out, q, kc[..., 0], vc, *args)
    with pytest.raises(ValueError, match="value_cache"):
        vllm.paged_attention_v1(out, q, kc, vc[..., None], *args)
    with pytest.raises(ValueError, match="alibi_slopes"):
        vllm.paged_attention_v1(out, q, kc, vc, *args, torch.zeros(7))
    with pytest.raises(TypeError, match="alibi_slopes"):
        vllm.paged_attention_v1(out, q, kc, vc, *args, torch.zeros(8, dtype=torch.float64))
    with pytest.raises(ValueError, match="num_kv_heads"):
        vllm.paged_attention_v1(out, q, kc, vc, 3, *args[1:])
    with pytest.raises(ValueError, match="key_cache"):  # 4 kv heads where the caches have 2
        vllm.paged_attention_v1(out, q, kc, vc, 4, *args[1:])
    with pytest.raises(ValueError, match="block_size"):
        vllm.paged_attention_v1(out, q, kc, vc, 2, 0.125, table, lens, 8, 9)
    # A 5-D cache whose last two dims do not make head_size.
    with pytest.raises(ValueError, match="key_cache"):
        ops.paged_attention(q, kc.permute(0, 3, 1, 2, 4)[..., :2], vc.permute(0, 3, 1, 2), lens,
                            table)
    assert bool(out.isnan().all())  # nothing written by a refused call
