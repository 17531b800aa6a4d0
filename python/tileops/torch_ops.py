"""tileops' operators as PyTorch custom operators: ``torch.ops.tileops.<op>``.

``import tileops.torch_ops`` registers them once per process with ``torch.library`` (0.04 s
once torch and tileops are imported; ``import tileops`` alone does not import torch). Two
families, one namespace:

- vLLM's ``_C`` / ``_C_cache_ops`` operators under vLLM's names, argument orders and schemas
  (outputs first, mutated tensors declared ``Tensor(a!)``, return ``()``), over
  :mod:`tileops.vllm`: ``torch.ops.tileops.rms_norm(out, input, weight, epsilon)``.
- tileops' functional operators that vLLM does not have, in tileops' argument order, returning
  new tensors: ``torch.ops.tileops.linear(input, weight, bias)``.

Each has a CPU kernel and a shape-only kernel for fake/meta tensors: ``register_fake`` on torch
>= 2.4, ``impl_abstract`` on 2.1-2.3 (what ``torch.compile`` traces with), a ``Meta`` kernel
before. docs/torch-ops.md lists them with vLLM's forms.
"""

import torch

from tileops import ops as _ops
from tileops import vllm as _vllm

__all__ = ["SCHEMAS"]

_LIB = torch.library.Library("tileops", "DEF")
# Every registered operator's schema, by name (docs/torch-ops.md, the tests).
SCHEMAS = {}


def _register_fake(name, fake):
    qualname = "tileops::" + name
    if hasattr(torch.library, "register_fake"):  # torch >= 2.4
        torch.library.register_fake(qualname, fake, lib=_LIB)
    elif hasattr(torch.library, "impl_abstract"):  # torch 2.1 - 2.3
        torch.library.impl_abstract(qualname, fake, lib=_LIB)
    else:  # torch 1.13 - 2.0: fake tensors run the Meta kernel
        _LIB.impl(name, fake, "Meta")


def _writes_only(*args, **kwargs):
    """The fake kernel of an operator that only writes its arguments: nothing to allocate."""


def _op(schema, fake=_writes_only):
    """Defines `schema` in the tileops namespace with the decorated function as its CPU kernel.

    Python kernels receive only the arguments the caller passed (torch 1.13 does not fill in the
    schema's defaults), so each kernel restates its schema's defaults.
    """
    def register(kernel):
        name = schema.split("(", 1)[0]
        _LIB.define(schema)
        _LIB.impl(name, kernel, "CPU")
        _register_fake(name, fake)
        SCHEMAS[name] = schema
        return kernel
    return register


# ---- vLLM's forms (csrc/torch_bindings.cpp, csrc/cpu/torch_bindings.cpp) ---------------------

# vLLM names the output `result` in silu_and_mul and rms_norm, `out` elsewhere (keywords match).
_op("silu_and_mul(Tensor(a!) result, Tensor input) -> ()")(_vllm.silu_and_mul)
for _name in ("mul_and_silu", "gelu_and_mul", "gelu_tanh_and_mul", "gelu_new", "gelu_fast",
              "gelu_quick"):
    _op(f"{_name}(Tensor(a!) out, Tensor input) -> ()")(getattr(_vllm, _name))


_op("fatrelu_and_mul(Tensor(a!) out, Tensor input, float threshold=0.0) -> ()")(
    _vllm.fatrelu_and_mul)
_op("rms_norm(Tensor(a!) result, Tensor input, Tensor weight, float epsilon) -> ()")(_vllm.rms_norm)
_op("fused_add_rms_norm(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float epsilon) "
    "-> ()")(_vllm.fused_add_rms_norm)
_op("rotary_embedding(Tensor positions, Tensor(a!) query, Tensor(b!)? key, int head_size, "
    "Tensor cos_sin_cache, bool is_neox) -> ()")(_vllm.rotary_embedding)

# vLLM's scales are float32 tensors of one element (older vLLM: Python floats, not accepted here).
_CACHE_FORMAT = 'str kv_cache_dtype="auto", Tensor? k_scale=None, Tensor? v_scale=None'


@_op("reshape_and_cache(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, "
     f"Tensor slot_mapping, {_CACHE_FORMAT}) -> ()")
def _reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype="auto",
                       k_scale=None, v_scale=None):
    _vllm.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
                            k_scale, v_scale)


@_op("reshape_and_cache_flash(Tensor key, Tensor value, Tensor(a!) key_cache, "
     f"Tensor(b!) value_cache, Tensor slot_mapping, {_CACHE_FORMAT}) -> ()")
def _reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping,
                             kv_cache_dtype="auto", k_scale=None, v_scale=None):
    _vllm.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping,
                                  kv_cache_dtype, k_scale, v_scale)


_PAGED_TAIL = ("Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, "
               "Tensor block_tables, Tensor seq_lens, int block_size, int max_seq_len, "
               f"Tensor? alibi_slopes=None, {_CACHE_FORMAT}, int tp_rank=0, "
               "int blocksparse_local_blocks=0, int blocksparse_vert_stride=0, "
               "int blocksparse_block_size=64, int blocksparse_head_sliding_step=0) -> ()")


@_op(f"paged_attention_v1(Tensor(a!) out, Tensor query, {_PAGED_TAIL}")
def _paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
                        seq_lens, block_size, max_seq_len, alibi_slopes=None,
                        kv_cache_dtype="auto", k_scale=None, v_scale=None, tp_rank=0,
                        blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                        blocksparse_block_size=64, blocksparse_head_sliding_step=0):
    _vllm.paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale,
                             block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
                             kv_cache_dtype, k_scale, v_scale, tp_rank, blocksparse_local_blocks,
                             blocksparse_vert_stride, blocksparse_block_size,
                             blocksparse_head_sliding_step)


@_op("paged_attention_v2(Tensor(a!) out, Tensor(b!) exp_sums, Tensor(c!) max_logits, "
     f"Tensor(d!) tmp_out, Tensor query, {_PAGED_TAIL}")
def _paged_attention_v2(out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache,
                        num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                        alibi_slopes=None, kv_cache_dtype="auto", k_scale=None, v_scale=None,
                        tp_rank=0, blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                        blocksparse_block_size=64, blocksparse_head_sliding_step=0):
    # The workspaces are neither read nor written (tileops.vllm.paged_attention_v2).
    _vllm.paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale,
                             block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
                             kv_cache_dtype, k_scale, v_scale, tp_rank, blocksparse_local_blocks,
                             blocksparse_vert_stride, blocksparse_block_size,
                             blocksparse_head_sliding_step)


_op("swap_blocks(Tensor src, Tensor(a!) dst, Tensor block_mapping) -> ()")(_vllm.swap_blocks)
# torch.jit.script and trace (1.13) drop this call from their graphs: their alias analysis does
# not see writes to the elements of a list. copy_cache_blocks, one cache per call, stays (a name
# of its own: an overload of copy_blocks is not callable from TorchScript by name, and a bare
# call tries the list form first, formatting the tensors into an error message it discards).
_op("copy_blocks(Tensor(a!)[] key_caches, Tensor(b!)[] value_caches, Tensor block_mapping) -> ()")(
    _vllm.copy_blocks)
_op("copy_cache_blocks(Tensor(a!) cache, Tensor block_mapping) -> ()")(_ops.copy_blocks)


# ---- tileops' functional operators: new outputs ------------------------------------------------


def _like(t, shape=None, dtype=None):
    return t.new_empty(t.shape if shape is None else shape, dtype=dtype or t.dtype)


def _broadcast_fake(input, other):
    return _like(input, torch.broadcast_shapes(input.shape, other.shape))


for _name in ("add", "mul"):
    _op(f"{_name}(Tensor input, Tensor other) -> Tensor", _broadcast_fake)(getattr(_ops, _name))
_op("swiglu(Tensor input, Tensor gate) -> Tensor", lambda input, gate: _like(input))(_ops.swiglu)
_op("causal_softmax(Tensor input) -> Tensor", _like)(_ops.causal_softmax)
_op("scaled_softmax(Tensor input, float scale) -> Tensor",
    lambda input, scale: _like(input))(_ops.scaled_softmax)


@_op("cast(Tensor input, ScalarType dtype) -> Tensor",
     lambda input, dtype: _like(input, dtype=dtype))
def _cast(input, dtype):
    return _ops.cast(input, dtype=dtype)


def _cat_fake(tensors, dim=0):
    shape = list(tensors[0].shape)
    dim = dim + len(shape) if dim < 0 else dim
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return _like(tensors[0], shape)


@_op("cat(Tensor[] tensors, int dim=0) -> Tensor", _cat_fake)
def _cat(tensors, dim=0):
    return _ops.cat(tensors, dim)


_op("embedding(Tensor input_ids, Tensor weight) -> Tensor",
    lambda input_ids, weight: _like(weight, (*input_ids.shape, weight.shape[-1])))(
        _ops.embedding)


def _linear_fake(input, weight, bias=None):
    return _like(input, (*input.shape[:-1], weight.shape[0]))


@_op("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", _linear_fake)
def _linear(input, weight, bias=None):
    return _ops.linear(input, weight, bias)


def _matmul_fake(a, b, trans_a=False, trans_b=False):
    a = a.transpose(-1, -2) if trans_a else a
    b = b.transpose(-1, -2) if trans_b else b
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return _like(a, (*batch, a.shape[-2], b.shape[-1]))


@_op("matmul(Tensor a, Tensor b, bool trans_a=False, bool trans_b=False) -> Tensor",
     _matmul_fake)
def _matmul(a, b, trans_a=False, trans_b=False):
    return _ops.matmul(a, b, trans_a=trans_a, trans_b=trans_b)


def _rotary_fake(query, key, cos, sin, head_size, is_neox_style=True):
    return _like(query), _like(key)


@_op("apply_rotary_pos_emb(Tensor query, Tensor key, Tensor cos, Tensor sin, int head_size, "
     "bool is_neox_style=True) -> (Tensor, Tensor)", _rotary_fake)
def _apply_rotary_pos_emb(query, key, cos, sin, head_size, is_neox_style=True):
    query_out, key_out = _like(query), _like(key)
    _ops.apply_rotary_pos_emb(query, key, cos, sin, head_size, is_neox_style, query_out, key_out)
    return query_out, key_out


_FLASH_ATTENTION = (
    "flash_attention(Tensor query, Tensor key, Tensor value, Tensor? cu_seqlens_q=None, "
    "Tensor? cu_seqlens_kv=None, Tensor? block_table=None, float scale=0.0, bool causal=False, "
    "int window_left=-1, int window_right=-1, int block_size=0) -> Tensor")


def _flash_attention_fake(query, key, value, cu_seqlens_q=None, cu_seqlens_kv=None,
                          block_table=None, scale=0.0, causal=False, window_left=-1,
                          window_right=-1, block_size=0):
    return _like(query)


@_op(_FLASH_ATTENTION, _flash_attention_fake)
def _flash_attention(query, key, value, cu_seqlens_q=None, cu_seqlens_kv=None, block_table=None,
                     scale=0.0, causal=False, window_left=-1, window_right=-1, block_size=0):
    return _ops.flash_attention(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table,
                                scale=scale, causal=causal, window_left=window_left,
                                window_right=window_right, block_size=block_size)


# The same with vLLM's flash_attn_varlen_func(return_softmax_lse=True): also the natural
# log-sum-exp of each query row's scaled scores, float32 [H, Tq] (-inf where no key is visible).
_FLASH_ATTENTION_WITH_LSE = _FLASH_ATTENTION.replace(
    "flash_attention(", "flash_attention_with_lse(").replace("-> Tensor", "-> (Tensor, Tensor)")


def _flash_attention_with_lse_fake(query, key, value, cu_seqlens_q=None, cu_seqlens_kv=None,
                                   block_table=None, scale=0.0, causal=False, window_left=-1,
                                   window_right=-1, block_size=0):
    return _like(query), query.new_empty((query.shape[1], query.shape[0]), dtype=torch.float32)


@_op(_FLASH_ATTENTION_WITH_LSE, _flash_attention_with_lse_fake)
def _flash_attention_with_lse(query, key, value, cu_seqlens_q=None, cu_seqlens_kv=None,
                              block_table=None, scale=0.0, causal=False, window_left=-1,
                              window_right=-1, block_size=0):
    return _ops.flash_attention(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table,
                                scale=scale, causal=causal, window_left=window_left,
                                window_right=window_right, block_size=block_size,
                                return_softmax_lse=True)


@_op("top_k_top_p_mask(Tensor(a!) logits, Tensor? k=None, Tensor? p=None) -> ()")
def _top_k_top_p_mask(logits, k=None, p=None):
    _ops.top_k_top_p_mask(logits, k, p)
