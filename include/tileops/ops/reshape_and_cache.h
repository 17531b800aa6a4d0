// reshape_and_cache: writes each token's key and value rows into a paged KV cache (vLLM).
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// key: [T, Hkv, Dk], value: [T, Hkv, Dv]; key_cache: [num_blocks, block_size, Hkv, Dk],
// value_cache: [num_blocks, block_size, Hkv, Dv], key_cache[s / block_size, s % block_size] =
// key[t] for slot s = slot_mapping[t] (int32/int64 [T]). Slot -1 skips the token (padding);
// any other slot outside [0, num_blocks·block_size) is kInvalidArgument naming slot_mapping and
// the token, raised before anything is written. Caches have their input's dtype (any dtype:
// rows are copied bit for bit) and must not overlap the inputs or each other. Two tokens with
// one slot: which row lands is unspecified. Any strides. Either cache may split D in two,
// [num_blocks, block_size, Hkv, D / x, x]: vLLM's key cache [num_blocks, Hkv, D / x, block_size,
// x] as `.permute(0, 3, 1, 2, 4)` (its value cache [num_blocks, Hkv, D, block_size] is the 4-D
// `.permute(0, 3, 1, 2)`). fp8 caches (vLLM's kv_cache_dtype "fp8"): a float8_e4m3fn or
// float8_e5m2 cache of float32/float16/bfloat16 rows stores fp8(float(x) / scale), rounded to
// nearest even and saturating at the format's largest finite value (NaN stays NaN), with
// k_scale/v_scale (float32, one element; none: 1) for the key/value cache.
void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                       const Tensor& value_cache, const Tensor& slot_mapping,
                       const Tensor& k_scale = {}, const Tensor& v_scale = {},
                       const Context& ctx = {});

// The combined cache: kv_cache [2, num_blocks, block_size, Hkv, D], kv_cache[0] for keys and
// kv_cache[1] for values (key and value then share D).
void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& kv_cache,
                       const Tensor& slot_mapping, const Context& ctx = {});

// Class form of the separate-caches form.
class ReshapeAndCache {
 public:
  ReshapeAndCache(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                  const Tensor& value_cache, const Tensor& slot_mapping, const Tensor& k_scale = {},
                  const Tensor& v_scale = {}, int implementation_index = 0);
  void operator()(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                  const Tensor& value_cache, const Tensor& slot_mapping, const Tensor& k_scale = {},
                  const Tensor& v_scale = {}, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
