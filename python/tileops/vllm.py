"""vLLM's custom-op forms (``vllm._custom_ops``) over :mod:`tileops.ops`.

vLLM's kernels take the output first and return None (``torch.ops._C.gelu_and_mul(out, x)``);
tileops' operators take their inputs first and ``out`` last. This module keeps vLLM's names,
argument order and keywords, maps each call onto one tileops operator without copying tensor
data, and returns None (vLLM's Python-level ``apply_top_k_top_p`` returns its logits, as here).
Errors are tileops' own: ValueError (bad argument), TypeError (bad dtype).
"""

import numpy as _np

from tileops import ops as _ops
from tileops import tl as _tl

__all__ = [
    "silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul",
    "gelu_new", "gelu_fast", "gelu_quick", "swap_blocks", "copy_blocks",
]
__all__ += ["rms_norm", "fused_add_rms_norm", "rotary_embedding"]
__all__ += ["apply_top_k_top_p", "cutlass_scaled_mm"]
# Paged attention and the KV-cache writes (their own block below).
__all__ += ["paged_attention_v1", "paged_attention_v2", "reshape_and_cache",
            "reshape_and_cache_flash"]


def silu_and_mul(out, input):
    """out = silu(input[..., :d]) * input[..., d:]."""
    _ops.silu_and_mul(input, -1, out)


def mul_and_silu(out, input):
    """out = input[..., :d] * silu(input[..., d:])."""
    _ops.mul_and_silu(input, -1, out)


def gelu_and_mul(out, input):
    """out = gelu(input[..., :d]) * input[..., d:] (erf gelu)."""
    _ops.gelu_and_mul(input, -1, out)


def gelu_tanh_and_mul(out, input):
    """out = gelu_tanh(input[..., :d]) * input[..., d:]."""
    _ops.gelu_tanh_and_mul(input, -1, out)


def fatrelu_and_mul(out, input, threshold=0.0):
    """out = where(input[..., :d] > threshold, input[..., :d], 0) * input[..., d:]."""
    _ops.fatrelu_and_mul(input, threshold, -1, out)


def gelu_new(out, input):
    """out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    _ops.gelu_new(input, out)


def gelu_fast(out, input):
    """out = 0.5 x (1 + tanh(0.7978845608 x (1 + 0.044715 x^2)))."""
    _ops.gelu_fast(input, out)


def gelu_quick(out, input):
    """out = x * sigmoid(1.702 x)."""
    _ops.gelu_quick(input, out)


def swap_blocks(src, dst, block_mapping):
    """dst[block_mapping[i, 1]] = src[block_mapping[i, 0]] for each row (blocks along dim 0)."""
    _ops.swap_blocks(src, dst, block_mapping)


def copy_blocks(key_caches, value_caches, block_mapping):
    """Within every cache of both lists, cache[block_mapping[i, 1]] = cache[block_mapping[i, 0]].

    The caches must all have one block count (as vLLM's layers do), so the first cache's check
    of the block ids stands for all and nothing is written when an id is out of range.
    """
    caches = list(key_caches) + list(value_caches)
    if len(key_caches) != len(value_caches):
        raise ValueError(f"copy_blocks: 'value_caches': expected as many caches as key_caches "
                         f"({len(key_caches)}), got {len(value_caches)}")
    blocks = {int(c.shape[0]) if len(c.shape) else None for c in caches}
    if len(blocks) > 1:
        raise ValueError(f"copy_blocks: 'key_caches': expected caches of one block count "
                         f"(dim 0), got {sorted(b for b in blocks if b is not None)}")
    for cache in caches:
        _ops.copy_blocks(cache, block_mapping)


def rms_norm(out, input, weight, epsilon):
    """out = input / sqrt(mean(input^2, -1) + epsilon) * weight."""
    _ops.rms_norm(input, weight, epsilon, out)


def fused_add_rms_norm(input, residual, weight, epsilon):
    """residual += input, then input = rms_norm(residual) * weight, both in place."""
    _ops.add_rms_norm(input, residual, weight, epsilon)


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    """Rotates query and key (None: query only) in place by cos_sin_cache[positions] (vLLM's
    RotaryEmbedding: the rotary width is cos_sin_cache's shape[1])."""
    _ops.rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)


# ---- sampling: vllm/v1/sample/ops/topk_topp_sampler.py --------------------------------------


def apply_top_k_top_p(logits, k, p):
    """Logits [B, V] outside the top k, then outside the top-p nucleus, set to -inf in place.

    k: None or an int32/int64 tensor [B] in [1, V]; p: None or a float32 tensor [B] in (0, 1].
    Returns logits (vLLM's form). Ties at the k-th value are kept; the nucleus keeps equal logits
    of higher index first, as vLLM's stable ascending sort does (tileops.ops.top_k_top_p_mask).
    """
    _ops.top_k_top_p_mask(logits, k, p)
    return logits


# --- Paged attention and the KV-cache writes --------------------------------------------------
# vLLM's caches: key [num_blocks, Hkv, D / x, block_size, x] (x = 16 bytes of elements), value
# [num_blocks, Hkv, D, block_size]; the flash layout [num_blocks, block_size, Hkv, D] for both.
# tileops reads the first two in place through views in its own dim order (no copy).


def cutlass_scaled_mm(a, b, scale_a, scale_b, out_dtype, bias=None):
    """vLLM's fused ``(scale_a * a) @ (scale_b * b) + bias`` in out_dtype, returned (as vLLM's
    Python wrapper does). a [..., K] (leading dims flattened, as vLLM), b [K, N] (vLLM passes
    weight.t()), float8 codes: torch float8 dtypes as themselves, uint8 storage as float8_e4m3fn
    (vLLM's fp8 kind). scale_a: 1 or M elements, scale_b: 1 or N (per tensor / token /
    channel), or 128x128 blocks [M, ceil(K/128)] and [ceil(K/128), ceil(N/128)]; float32.
    bias [N] in out_dtype. out_dtype: bfloat16 or float16 as vLLM, float32 too."""
    lead = tuple(a.shape[:-1])
    a2 = a.reshape(-1, a.shape[-1])
    fp8 = "float8_e4m3fn" if str(a.dtype).endswith("uint8") else None
    out = _ops.scaled_mm(a2, b, scale_a, scale_b, bias, out_dtype=out_dtype, fp8_dtype=fp8)
    return out.reshape(*lead, b.shape[1])


def _permuted(t, dims):
    """A view of `t` with its dims in `dims` order (torch: permute, numpy: transpose)."""
    permute = getattr(t, "permute", None) or t.transpose
    return permute(*dims)


def _rank(t):
    return len(t.shape)


def _vllm_caches(op, key_cache, value_cache):
    """vLLM's key/value caches as tileops' [num_blocks, block_size, Hkv, D / x, x] and
    [num_blocks, block_size, Hkv, D] views."""
    if _rank(key_cache) != 5:
        raise ValueError(f"{op}: 'key_cache': expected [num_blocks, num_kv_heads, head_size / x, "
                         f"block_size, x], got shape {list(key_cache.shape)}")
    if _rank(value_cache) != 4:
        raise ValueError(f"{op}: 'value_cache': expected [num_blocks, num_kv_heads, head_size, "
                         f"block_size], got shape {list(value_cache.shape)}")
    return _permuted(key_cache, (0, 3, 1, 2, 4)), _permuted(value_cache, (0, 3, 1, 2))


# vLLM's kv_cache_dtype names of its fp8 caches ("fp8" is e4m3 on CUDA and CPU).
_FP8_CACHES = {"fp8": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


def _cache_format(op, kv_cache_dtype, k_scale, v_scale, *caches):
    """The caches and scales as tileops reads them. "auto": the caches as given (the model's
    dtype), scales unread (None). fp8: uint8 storage (vLLM's) read as the fp8 dtype through
    tl.reinterpret (by pointer), scales as one-element float32 tensors."""
    if kv_cache_dtype == "auto":
        return caches, None, None
    fmt = _FP8_CACHES.get(kv_cache_dtype)
    if fmt is None:
        raise ValueError(f"{op}: 'kv_cache_dtype': expected 'auto', 'fp8', 'fp8_e4m3' or "
                         f"'fp8_e5m2', got {kv_cache_dtype!r}")
    return ([_tl.reinterpret(c, fmt) for c in caches], _scale(op, "k_scale", k_scale),
            _scale(op, "v_scale", v_scale))


def _scale(op, name, scale):
    """vLLM's scale: a float32 tensor of one element, or a Python float (older vLLM)."""
    if scale is None:
        raise ValueError(f"{op}: '{name}': expected a scale for an fp8 cache, got None")
    if isinstance(scale, (int, float)):
        return _np.array([scale], dtype=_np.float32)
    return scale


def paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
                       seq_lens, block_size, max_seq_len, alibi_slopes=None,
                       kv_cache_dtype="auto", k_scale=None, v_scale=None, tp_rank=0,
                       blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                       blocksparse_block_size=64, blocksparse_head_sliding_step=0):
    """out[b, h] = softmax(scale * q k^T + alibi) v over sequence b's cached keys (vLLM's caches).

    query/out [num_seqs, num_heads, head_size]; key_cache and value_cache in vLLM's layouts
    (read in place); block_tables [num_seqs, max_blocks] and seq_lens [num_seqs] (int32 or
    int64); alibi_slopes float32 [num_heads] or None. kv_cache_dtype "auto" (caches of the
    query's dtype; k_scale/v_scale unread) or "fp8"/"fp8_e4m3"/"fp8_e5m2" (uint8 caches read as
    fp8 * scale). ``max_seq_len`` and ``tp_rank`` only guide vLLM's CUDA launch and are not read.
    ``scale`` must be nonzero (tileops' own 0 would mean 1/sqrt(head_size)). Refused:
    block-sparse attention (``blocksparse_vert_stride`` > 1).
    """
    op = "paged_attention_v1"
    if blocksparse_vert_stride > 1:
        raise NotImplementedError(f"{op}: 'blocksparse_vert_stride': block-sparse attention is "
                                  f"not supported (expected <= 1), got {blocksparse_vert_stride}")
    if scale == 0:
        raise ValueError(f"{op}: 'scale': expected a nonzero scale, got 0")
    key_cache, value_cache = _vllm_caches(op, key_cache, value_cache)
    (key_cache, value_cache), k_scale, v_scale = _cache_format(
        op, kv_cache_dtype, k_scale, v_scale, key_cache, value_cache)
    _ops.paged_attention(query, key_cache, value_cache, seq_lens, block_tables,
                         num_kv_heads=num_kv_heads, scale=scale, block_size=block_size,
                         output=out, alibi_slopes=alibi_slopes, k_scale=k_scale,
                         v_scale=v_scale)


def paged_attention_v2(out, exp_sum, max_logits, tmp_out, query, key_cache, value_cache,
                       num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                       alibi_slopes=None, kv_cache_dtype="auto", k_scale=None, v_scale=None,
                       tp_rank=0, blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                       blocksparse_block_size=64, blocksparse_head_sliding_step=0):
    """paged_attention_v1's result. vLLM's v2 splits each sequence into partitions and needs the
    workspaces exp_sum, max_logits [num_seqs, num_heads, partitions] and tmp_out [num_seqs,
    num_heads, partitions, head_size]; tileops splits long contexts itself (its own workspace),
    so they are accepted and neither read nor written."""
    paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
                       seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
                       v_scale, tp_rank, blocksparse_local_blocks, blocksparse_vert_stride,
                       blocksparse_block_size, blocksparse_head_sliding_step)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype="auto",
                      k_scale=None, v_scale=None):
    """key/value [T, Hkv, D] into vLLM's key_cache [num_blocks, Hkv, D / x, block_size, x] and
    value_cache [num_blocks, Hkv, D, block_size] at slot_mapping (int32/int64 [T], -1 skips);
    fp8 caches (uint8) store fp8(x / scale), saturating, as vLLM's kernels."""
    op = "reshape_and_cache"
    key_cache, value_cache = _vllm_caches(op, key_cache, value_cache)
    (key_cache, value_cache), k_scale, v_scale = _cache_format(
        op, kv_cache_dtype, k_scale, v_scale, key_cache, value_cache)
    _ops.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale)


def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping,
                            kv_cache_dtype="auto", k_scale=None, v_scale=None):
    """key/value [T, Hkv, D] into key_cache/value_cache [num_blocks, block_size, Hkv, D] (any
    strides: vLLM's HND layout is a view of this) at slot_mapping (-1 skips); fp8 as
    reshape_and_cache."""
    (key_cache, value_cache), k_scale, v_scale = _cache_format(
        "reshape_and_cache_flash", kv_cache_dtype, k_scale, v_scale, key_cache, value_cache)
    _ops.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale)
