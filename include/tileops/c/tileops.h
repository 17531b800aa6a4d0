/* tileops C API: the operators of tileops::ops for C callers and foreign-function interfaces.
 *
 * Every entry validates its arguments, never throws or aborts, and returns a status; on failure
 * tileops_last_error() gives a message naming the operator and the argument (the names are the
 * parameter names below). Outputs are untouched when a call fails validation. Tensors are
 * non-owning strided views; a NULL `ctx` means the defaults (implementation 0, no stream). */
#ifndef TILEOPS_C_TILEOPS_H_
#define TILEOPS_C_TILEOPS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, in the order of tileops::DataType. */
typedef enum tileops_dtype {
  TILEOPS_BOOL = 0,
  TILEOPS_INT8,
  TILEOPS_INT16,
  TILEOPS_INT32,
  TILEOPS_INT64,
  TILEOPS_UINT8,
  TILEOPS_FLOAT16,
  TILEOPS_BFLOAT16,
  TILEOPS_FLOAT32,
  TILEOPS_FLOAT64,
  TILEOPS_FLOAT8_E4M3FN,
  TILEOPS_FLOAT8_E5M2,
  TILEOPS_HIFLOAT8
} tileops_dtype;

typedef enum tileops_device_type {
  TILEOPS_DEVICE_CPU = 0,
  TILEOPS_DEVICE_CUDA = 1
} tileops_device_type;

typedef enum tileops_status {
  TILEOPS_OK = 0,
  TILEOPS_INVALID_ARGUMENT, /* bad shape, rank, value, stride or descriptor */
  TILEOPS_INVALID_TYPE,     /* wrong dtype */
  TILEOPS_UNSUPPORTED,      /* a valid request this build or device cannot serve */
  TILEOPS_OUT_OF_MEMORY,
  TILEOPS_INTERNAL_ERROR, /* a bug in tileops */
  TILEOPS_COMPILE_ERROR   /* a tile-language kernel could not be built: the C++ compiler
                             ($TILEOPS_CXX, $TILEOPS_TL_TARGET) is missing or failed, or the
                             JIT cache directory ($TILEOPS_CACHE_DIR) cannot be made */
} tileops_status;

/* The most dimensions a tensor may have. */
#define TILEOPS_MAX_RANK 8

/* A strided view. Extents and strides are in elements and must be >= 0 (a stride of 0
 * broadcasts an input); `shape` may be NULL only when ndim is 0, `strides` NULL means
 * contiguous row-major. `data` may be NULL only for a tensor with no elements. */
typedef struct tileops_tensor { /* NOLINT(readability-identifier-naming): C names */
  void* data;
  int32_t dtype;        /* a tileops_dtype */
  int32_t device_type;  /* a tileops_device_type */
  int32_t device_index; /* >= 0 */
  int32_t ndim;         /* 0 ... TILEOPS_MAX_RANK */
  const int64_t* shape;
  const int64_t* strides; /* NULL = contiguous */
} tileops_tensor;

typedef struct tileops_context { /* NOLINT(readability-identifier-naming): C names */
  void* stream;                  /* CPU: must be NULL; CUDA: a cudaStream_t */
  int32_t implementation_index;  /* 0 = the default, fastest correct implementation */
} tileops_context;

/* The message of the last failed call on this thread ("" if none failed). The pointer stays
 * valid until the next failing call on this thread. */
const char* tileops_last_error(void);

/* The library's version, "MAJOR.MINOR.PATCH" (the CMake package's and tileops.__version__). */
const char* tileops_version(void);

/* The contracts are those of include/tileops/ops/<op>.h. The entries of the declared operators
 * are generated from their declarations: */
#include "tileops/c/tileops_ops.h"  // IWYU pragma: export

/* Concatenates tensors[0 .. num_tensors) along dim (negative counts from the end). */
tileops_status tileops_cat(const tileops_tensor* tensors, size_t num_tensors, int32_t dim,
                           const tileops_tensor* out, const tileops_context* ctx);
/* residual_out = input + residual; out = rms_norm(residual_out). With out and residual_out both
 * NULL: the in-place form, writing out into input and residual_out into residual. */
tileops_status tileops_add_rms_norm(const tileops_tensor* input, const tileops_tensor* residual,
                                    const tileops_tensor* weight, double eps,
                                    const tileops_tensor* out, const tileops_tensor* residual_out,
                                    const tileops_context* ctx);

/* linear's packed-weight option (include/tileops/ops/packed_linear.h): *numel receives the
 * elements of the packed form of an [n, k] weight of dtype; pack_linear_weight writes it into
 * packed (rank 1, contiguous, that many elements of the weight's dtype); linear_packed is
 * linear with it, N taken from out's last dim. */
tileops_status tileops_packed_linear_weight_numel(int64_t n, int64_t k, int32_t dtype,
                                                  int64_t* numel);
/* *pays receives 1 where linear_packed over the packed form is expected to beat linear over the
 * [N, K] weight of dtype (float32, float16 or bfloat16) on this CPU, else 0 (ops::
 * linear_packing_pays: 0 for bfloat16 where AMX is on). */
tileops_status tileops_linear_packing_pays(int32_t dtype, int32_t* pays);

/* Weight-only quantization (include/tileops/ops/quantized_linear.h): *bytes receives the size
 * of quantize_weight's output for an [n, k] weight (bits 8 or 4, group_size, symmetric nonzero
 * or 0); tileops_quantize_weight writes it into qweight (rank 1, contiguous uint8);
 * tileops_linear_quantized reads it, N and K from its header. */
tileops_status tileops_quantized_weight_bytes(int64_t n, int64_t k, int32_t bits,
                                              int32_t group_size, int32_t symmetric,
                                              int64_t* bytes);

/* KV cache, rotary embedding and sampling (include/tileops/ops/<op>.h). NULL for an optional
 * tensor means none; the rotary operators' NULL query_out/key_out mean in place (into
 * query/key), and rotary_embedding's rotary_dim <= 0 means cos_sin_cache's shape[1]. */

/* reshape_and_cache into one kv_cache [2, num_blocks, block_size, Hkv, D]. */
tileops_status tileops_reshape_and_cache_combined(const tileops_tensor* key,
                                                  const tileops_tensor* value,
                                                  const tileops_tensor* kv_cache,
                                                  const tileops_tensor* slot_mapping,
                                                  const tileops_context* ctx);
/* One token per row of logits [B, V] into out (int64 or int32); k (int32/int64, B or 1
 * elements) and p (float32/float64) may be NULL (off). Deterministic for a seed. */
tileops_status tileops_top_k_top_p_sampler(const tileops_tensor* logits, const tileops_tensor* k,
                                           const tileops_tensor* p, uint64_t seed,
                                           const tileops_tensor* out, const tileops_context* ctx);
/* Scalar k and p: k <= 0 or k >= V and p >= 1 are off. */
tileops_status tileops_top_k_top_p_sampler_scalar(const tileops_tensor* logits, int64_t k, double p,
                                                  uint64_t seed, const tileops_tensor* out,
                                                  const tileops_context* ctx);
/* One token per row of probs [B, V] into out (int32 or int64). */
tileops_status tileops_topk_topp_sampling(const tileops_tensor* probs, int64_t topk, double topp,
                                          uint64_t seed, const tileops_tensor* out,
                                          const tileops_context* ctx);

/* Attention attributes (include/tileops/ops/flash_attention.h): scale 0 = 1/sqrt(head_size);
 * window bounds -1 = unbounded; block_size 0 = from the cache's shape; sliding_window 0 = none,
 * w > 0 = (w - 1, 0) and must agree with window_left/right when those are given. */
typedef struct tileops_attention_attributes { /* NOLINT(readability-identifier-naming) */
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_size;
  double scale;
  int32_t causal; /* bottom-right aligned when a sequence has fewer queries than keys */
  int64_t window_left;
  int64_t window_right;
  int64_t block_size;
  int64_t sliding_window;
} tileops_attention_attributes;

/* Varlen prefill attention: query [Tq, H, D]; key/value packed [Tkv, Hkv, D] (block_table NULL)
 * or paged caches [blocks, block_size, Hkv, D] with block_table [B, max_blocks];
 * cu_seqlens_q / cu_seqlens_kv [B + 1] or NULL (one sequence); output [Tq, H, D]. Index tensors:
 * int32 or int64, each on its own. */
tileops_status tileops_flash_attention(const tileops_tensor* query, const tileops_tensor* key,
                                       const tileops_tensor* value,
                                       const tileops_tensor* cu_seqlens_q,
                                       const tileops_tensor* cu_seqlens_kv,
                                       const tileops_tensor* block_table,
                                       const tileops_attention_attributes* attrs,
                                       const tileops_tensor* output, const tileops_context* ctx);
/* The same, with flash_attn_varlen_func's softmax_lse: float32 [num_heads, Tq], the natural
 * log-sum-exp of each query row's scaled, masked scores per head (-inf where a row sees no key);
 * NULL: not computed. */
tileops_status tileops_flash_attention_with_lse(
    const tileops_tensor* query, const tileops_tensor* key, const tileops_tensor* value,
    const tileops_tensor* cu_seqlens_q, const tileops_tensor* cu_seqlens_kv,
    const tileops_tensor* block_table, const tileops_attention_attributes* attrs,
    const tileops_tensor* output, const tileops_tensor* softmax_lse, const tileops_context* ctx);
/* Decode attention: query [B, H, D] over paged caches; seq_lens [B]; block_table [B, max_blocks]
 * (int32 or int64 each); seq_lens_host / block_table_host: optional host mirrors (NULL = none). */
tileops_status tileops_paged_attention(
    const tileops_tensor* query, const tileops_tensor* key_cache, const tileops_tensor* value_cache,
    const tileops_tensor* seq_lens, const tileops_tensor* block_table,
    const tileops_attention_attributes* attrs, const tileops_tensor* output,
    const tileops_tensor* seq_lens_host, const tileops_tensor* block_table_host,
    const tileops_context* ctx);
/* vLLM's optional inputs of paged attention, each NULL = none: the host mirrors above; ALiBi
 * slopes, float32 [H] (head h's score of key j of a sequence of n keys gains
 * alibi_slopes[h] * (j - (n - 1)) after the scale); k_scale / v_scale, float32 of one element
 * (none: 1), by which fp8 caches (both float8_e4m3fn or both float8_e5m2) are read as
 * fp8 * scale. */
typedef struct tileops_paged_attention_options { /* NOLINT(readability-identifier-naming) */
  const tileops_tensor* seq_lens_host;
  const tileops_tensor* block_table_host;
  const tileops_tensor* alibi_slopes;
  const tileops_tensor* k_scale;
  const tileops_tensor* v_scale;
} tileops_paged_attention_options;
/* tileops_paged_attention with `options` (NULL = none). Either cache may also be 5-D
 * [blocks, block_size, Hkv, D / x, x] (vLLM's key cache [blocks, Hkv, D / x, block_size, x]
 * through strides). */
tileops_status tileops_paged_attention_with_options(
    const tileops_tensor* query, const tileops_tensor* key_cache, const tileops_tensor* value_cache,
    const tileops_tensor* seq_lens, const tileops_tensor* block_table,
    const tileops_attention_attributes* attrs, const tileops_tensor* output,
    const tileops_paged_attention_options* options, const tileops_context* ctx);

/* Drops every cached operator instance. */
tileops_status tileops_clear_cache(void);
/* Threads of the process-wide CPU pool (>= 1, the caller included). Must not run while
 * operators run on other threads. */
tileops_status tileops_set_num_threads(int32_t num_threads);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TILEOPS_C_TILEOPS_H_ */
