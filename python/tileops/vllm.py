"""vLLM's custom-op forms (``vllm._custom_ops``) over :mod:`tileops.ops`.

vLLM's kernels take the output first and return None (``torch.ops._C.gelu_and_mul(out, x)``);
tileops' operators take their inputs first and ``out`` last. This module keeps vLLM's names,
argument order and keywords, maps each call onto one tileops operator without copying tensor
data, and returns None (vLLM's Python-level ``apply_top_k_top_p`` returns its logits, as here).
Errors are tileops' own: ValueError (bad argument), TypeError (bad dtype).
"""

from tileops import ops as _ops

__all__ = [
    "silu_and_mul", "mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul",
    "gelu_new", "gelu_fast", "gelu_quick", "swap_blocks", "copy_blocks",
]
__all__ += ["apply_top_k_top_p"]


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


# ---- sampling: vllm/v1/sample/ops/topk_topp_sampler.py --------------------------------------


def apply_top_k_top_p(logits, k, p):
    """Logits [B, V] outside the top k, then outside the top-p nucleus, set to -inf in place.

    k: None or an int32/int64 tensor [B] in [1, V]; p: None or a float32 tensor [B] in (0, 1].
    Returns logits (vLLM's form). Ties at the k-th value are kept; the nucleus keeps equal logits
    of higher index first, as vLLM's stable ascending sort does (tileops.ops.top_k_top_p_mask).
    """
    _ops.top_k_top_p_mask(logits, k, p)
    return logits
