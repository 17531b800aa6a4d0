"""tileops.vllm's paged attention (v1, v2) and cache writes over vLLM's own cache layouts, and
tileops.ops.paged_attention's 5-D key cache, ALiBi slopes and fp8 caches with scales, against
float64 torch references: every float dtype, GQA, tails (lengths 0, 1, 17, 300), block tables
with unused (-1) entries, NaN in every cache entry no sequence uses, poisoned outputs, bad
inputs. fp8 rounding is checked against a quantiser written here from the formats' fields."""

import pytest
import torch

from conftest import FLOATS, TOLERANCE, diagonal, make, poisoned
from tileops import ops
from tileops import vllm

BLOCK = 16
KV_HEADS = [8, 2, 1]
# The cases that also run the other (tl) implementations: each dtype and group size once, and
# below each fp8 cache format (a tl specialisation is a JIT compile of seconds in a fresh cache).
TL_CASES = diagonal(FLOATS, KV_HEADS)


def tl_implementations(here):
    """paged_attention's implementations after the native one where `here`, else none."""
    return ops.active_implementation_indices("paged_attention", device="cpu")[1:] if here else []


def x_of(dtype):
    return 16 // torch.tensor([], dtype=dtype).element_size()


def vllm_caches(k, v, kv_lens, block_size=BLOCK, seed=0, x=None):
    """Packed k, v [T, Hkv, D] in vLLM's caches, key [blocks, Hkv, D/x, block_size, x] and value
    [blocks, Hkv, D, block_size], over shuffled blocks; every other entry NaN."""
    t_count, hkv, d = k.shape
    x = x or x_of(k.dtype)
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
@pytest.mark.parametrize("kv_heads", KV_HEADS)
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
    # The other implementations (tl) on the same views, against the reference: on TL_CASES.
    for impl in tl_implementations((dtype, kv_heads) in TL_CASES):
        got = ops.paged_attention(q, kc.permute(0, 3, 1, 2, 4), vc.permute(0, 3, 1, 2),
                                  lens.long(), table.long(), scale=scale, alibi_slopes=slopes,
                                  implementation_index=impl)
        check(got, reference(q, k, v, kv_lens, scale, slopes), dtype, q.shape[2])


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
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        vllm.paged_attention_v1(out, q, kc, vc, *args, None, "int8", 1.0, 1.0)
    with pytest.raises(ValueError, match="k_scale"):
        vllm.reshape_and_cache(k, v, kc, vc, slots, "fp8_e5m2", None, 1.0)
    # fp8 caches are uint8 (vLLM's storage); a float32 cache is not one.
    with pytest.raises(TypeError, match="key_cache"):
        vllm.paged_attention_v1(out, q, kc, vc, *args, None, "fp8", 1.0, 1.0)
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


def fp8_values(fmt):
    """The 256 values of float8_e4m3fn ("e4m3") or float8_e5m2, from the bit fields."""
    e4m3 = fmt == "e4m3"
    mbits, bias = (3, 7) if e4m3 else (2, 15)
    out = []
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e, m = (b & 0x7F) >> mbits, b & ((1 << mbits) - 1)
        if (e4m3 and e == 15 and m == 7) or (not e4m3 and e == 31 and m != 0):
            out.append(float("nan"))
        elif not e4m3 and e == 31:
            out.append(sign * float("inf"))
        elif e == 0:
            out.append(sign * m / (1 << mbits) * 2.0 ** (1 - bias))
        else:
            out.append(sign * (1 + m / (1 << mbits)) * 2.0 ** (e - bias))
    return torch.tensor(out, dtype=torch.float64)


def quantised(x, scale, fmt):
    """The value fp8(float32(x) / scale) stands for: the nearest finite value, ties to the even
    code, beyond the largest finite value that value (saturating), NaN kept; float64."""
    values = fp8_values(fmt)
    codes = torch.arange(256)[values.isfinite()]
    finite = values[codes]
    top = finite.max()
    q = (x.float() / torch.tensor(scale, dtype=torch.float32)).double().clamp(-top, top)
    flat = q.reshape(-1)
    dist = (flat[:, None] - finite[None, :]).abs()
    tie = dist == dist.min(1, keepdim=True).values
    even = tie & (codes % 2 == 0)[None, :]
    pick = torch.where(even.any(1), even.float().argmax(1), tie.float().argmax(1))
    out = finite[pick]
    out[flat.isnan()] = float("nan")
    return out.reshape(x.shape)


FP8 = [("fp8", "e4m3"), ("fp8_e4m3", "e4m3"), ("fp8_e5m2", "e5m2")]
TL_FP8_CASES = diagonal(FLOATS, [name for name, _ in FP8])


def same_values(a, b):
    return torch.equal(a.double().nan_to_num(123.0), b.double().nan_to_num(123.0))


@pytest.mark.parametrize("kv_cache_dtype,fmt", FP8)
@pytest.mark.parametrize("dtype", FLOATS)
def test_reshape_and_cache_into_fp8_caches(kv_cache_dtype, fmt, dtype):
    _, k, v, kv_lens = inputs(dtype, 2, kv_lens=(5, 40), seed=30)
    k = (k * 200).to(dtype)  # beyond e4m3's 448 after the scale: saturates
    k.view(-1)[:4] = torch.tensor([float("nan"), 1e-3, -6e4, float("inf")], dtype=dtype)
    expected_k, expected_v, _, slots = vllm_caches(quantised(k, 0.5, fmt),
                                                   quantised(v, 0.25, fmt), kv_lens, x=16)
    kc = torch.full(expected_k.shape, 0xFF, dtype=torch.uint8)  # NaN in both formats
    vc = torch.full(expected_v.shape, 0xFF, dtype=torch.uint8)
    vllm.reshape_and_cache(k, v, kc, vc, slots, kv_cache_dtype, torch.tensor([0.5]), 0.25)
    values = fp8_values(fmt)
    assert same_values(values[kc.long()], expected_k)
    assert same_values(values[vc.long()], expected_v)
    # The flash layout [num_blocks, block_size, Hkv, D] the same way.
    kf = torch.full((kc.shape[0], BLOCK, 2, 64), 0xFF, dtype=torch.uint8)
    vf = torch.full((kc.shape[0], BLOCK, 2, 64), 0xFF, dtype=torch.uint8)
    vllm.reshape_and_cache_flash(k, v, kf, vf, slots, kv_cache_dtype, torch.tensor(0.5), 0.25)
    assert same_values(values[kf.long()], expected_k.permute(0, 3, 1, 2, 4).flatten(3))
    assert same_values(values[vf.long()], expected_v.permute(0, 3, 1, 2))


@pytest.mark.parametrize("kv_cache_dtype,fmt", FP8)
@pytest.mark.parametrize("dtype", FLOATS)
def test_paged_attention_on_fp8_caches(kv_cache_dtype, fmt, dtype):
    q, k, v, kv_lens = inputs(dtype, 2, seed=40)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    k_scale, v_scale = torch.tensor([0.02]), torch.tensor([0.01])
    _, _, table, slots = vllm_caches(k, v, kv_lens, x=16)
    kc = torch.full((int(table.max()) + 3, 2, 4, BLOCK, 16), 0xFF, dtype=torch.uint8)
    vc = torch.full((int(table.max()) + 3, 2, 64, BLOCK), 0xFF, dtype=torch.uint8)
    vllm.reshape_and_cache(k, v, kc, vc, slots, kv_cache_dtype, k_scale, v_scale)
    # The cache holds fp8(x / scale); attention reads fp8 * scale (float32 products).
    k_read = (quantised(k, 0.02, fmt).float() * k_scale).double()
    v_read = (quantised(v, 0.01, fmt).float() * v_scale).double()
    slopes = slopes_for(8)
    out = poisoned(q.shape, dtype)
    vllm.paged_attention_v1(out, q, kc, vc, 2, 0.125, table, lens, BLOCK, 300, slopes,
                            kv_cache_dtype, k_scale, v_scale)
    check(out, reference(q, k_read, v_read, kv_lens, 0.125, slopes), dtype, 64)
    # tileops.ops with the caches as fp8 views (tl.reinterpret) and one-element scales.
    from tileops import tl
    name = "float8_e4m3fn" if fmt == "e4m3" else "float8_e5m2"
    got = ops.paged_attention(q, tl.reinterpret(kc.permute(0, 3, 1, 2, 4), name),
                              tl.reinterpret(vc.permute(0, 3, 1, 2), name), lens, table,
                              scale=0.125, alibi_slopes=slopes, k_scale=k_scale,
                              v_scale=v_scale)
    assert torch.equal(got, out)
    for impl in tl_implementations((dtype, kv_cache_dtype) in TL_FP8_CASES):
        got = ops.paged_attention(q, tl.reinterpret(kc.permute(0, 3, 1, 2, 4), name),
                                  tl.reinterpret(vc.permute(0, 3, 1, 2), name), lens, table,
                                  scale=0.125, alibi_slopes=slopes, k_scale=k_scale,
                                  v_scale=v_scale, implementation_index=impl)
        check(got, reference(q, k_read, v_read, kv_lens, 0.125, slopes), dtype, 64)
