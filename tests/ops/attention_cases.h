// Building blocks of the attention tests: random queries, keys and values for a batch of
// sequences, packed ([T, Hkv, D]) or in a paged cache scattered over shuffled blocks, and the
// float64 reference on the same (rounded) values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "tests/support/reference_attention.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops/flash_attention.h"

namespace tileops::testing {

struct AttentionCase {
  DataType dtype = DataType::kFloat32;
  std::int64_t heads = 4, kv_heads = 1, head_size = 64;
  std::vector<std::int64_t> q_lens, kv_lens;
  bool causal = false;
  std::int64_t window_left = -1, window_right = -1;
  std::optional<std::int64_t> sliding_window;
  std::int64_t block_size = 0;          // 0: packed keys and values
  Layout layout = Layout::kContiguous;  // of query and output (and caches)
  double scale = 0;

  ops::AttentionAttributes attributes() const {
    ops::AttentionAttributes a;
    a.num_heads = heads, a.num_kv_heads = kv_heads, a.head_size = head_size;
    a.scale = scale, a.causal = causal;
    a.window_left = window_left, a.window_right = window_right;
    a.sliding_window = sliding_window;
    return a;
  }
  reference::AttentionSpec spec() const {
    reference::AttentionSpec s;
    s.heads = heads, s.kv_heads = kv_heads, s.head_size = head_size;
    s.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_size));
    s.causal = causal;
    s.window_left = sliding_window ? *sliding_window - 1 : window_left;
    s.window_right = sliding_window ? 0 : window_right;
    return s;
  }
};

// Attention outputs are weighted means of value rows: bfloat16 ones carry one rounding of the
// result (2^-9) and of the probabilities, far less than a head_size-long dot product's budget.
// Measured: every bfloat16 case passes at 3e-3 on the AMX and the vector paths; at 6e-3 a 1% error
// in the score scale still fails.
inline Tolerance attention_tolerance(DataType dtype, std::int64_t head_size) {
  if (dtype == DataType::kBFloat16) return {6e-3, 6e-3};
  return dot_tolerance(dtype, head_size);
}

inline std::vector<std::int64_t> cumulative(const std::vector<std::int64_t>& lens) {
  std::vector<std::int64_t> cu(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), cu.begin() + 1);
  return cu;
}

inline TensorStorage int32_tensor(const std::vector<std::int64_t>& values, const Dims& shape) {
  TensorStorage t(shape, DataType::kInt32);
  for (std::size_t i = 0; i < values.size(); ++i) {
    static_cast<std::int32_t*>(t.data())[i] = static_cast<std::int32_t>(values[i]);
  }
  return t;
}

// An index tensor of either width holding `values` in row-major order; strided: padded strides
// (every dim), so that readers go through them.
inline TensorStorage index_tensor(const std::vector<std::int64_t>& values, const Dims& shape,
                                  DataType dtype, Layout layout = Layout::kContiguous) {
  TensorStorage t = poisoned(shape, dtype, layout);
  const Tensor v = t.view();
  std::vector<std::int64_t> index(static_cast<std::size_t>(v.rank()), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    void* p = v.element_ptr(index.data());
    if (dtype == DataType::kInt64) {
      *static_cast<std::int64_t*>(p) = values[i];
    } else {
      *static_cast<std::int32_t*>(p) = static_cast<std::int32_t>(values[i]);
    }
    for (int d = v.rank() - 1; d >= 0; --d) {
      if (++index[d] < v.size(d)) break;
      index[d] = 0;
    }
  }
  return t;
}

// The values of an int32 or int64 tensor, row-major.
inline std::vector<std::int64_t> index_values(const Tensor& t) {
  std::vector<std::int64_t> values;
  for (double x : to_doubles(t)) values.push_back(static_cast<std::int64_t>(x));
  return values;
}

// `t` (an index tensor) as `dtype` in `layout`, same values.
inline TensorStorage as_index(const Tensor& t, DataType dtype, Layout layout) {
  return index_tensor(index_values(t), t.shape(), dtype, layout);
}

// Keys and values of every sequence: packed, plus (when block_size > 0) the paged cache holding
// the same rows, its block table (unused entries -1) and the cumulative kv lengths.
struct AttentionInputs {
  TensorStorage query, key, value;       // key/value packed [Tkv, Hkv, D]
  TensorStorage key_cache, value_cache;  // paged [blocks, block_size, Hkv, D]
  TensorStorage block_table, cu_q, cu_kv;
  std::vector<double> q, k, v;  // row-major float64 of query/key/value

  AttentionInputs(const AttentionCase& c, std::mt19937_64& rng) {
    const auto cu_q_values = cumulative(c.q_lens);
    const auto cu_kv_values = cumulative(c.kv_lens);
    const std::int64_t tq = cu_q_values.back(), tkv = cu_kv_values.back();
    const auto batch = static_cast<std::int64_t>(c.q_lens.size());
    query = random_tensor({tq, c.heads, c.head_size}, c.dtype, rng, c.layout);
    key = random_tensor({tkv, c.kv_heads, c.head_size}, c.dtype, rng);
    value = random_tensor({tkv, c.kv_heads, c.head_size}, c.dtype, rng);
    q = to_doubles(query), k = to_doubles(key), v = to_doubles(value);
    cu_q = int32_tensor(cu_q_values, {batch + 1});
    cu_kv = int32_tensor(cu_kv_values, {batch + 1});
    if (c.block_size == 0) return;
    const std::int64_t bs = c.block_size;
    std::int64_t max_blocks = 1, used = 0;
    for (std::int64_t len : c.kv_lens) {
      max_blocks = std::max(max_blocks, (len + bs - 1) / bs);
      used += (len + bs - 1) / bs;
    }
    const std::int64_t num_blocks = used + 3;  // spare blocks never referenced
    std::vector<std::int64_t> order(num_blocks);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::int64_t> table(batch * max_blocks, -1);
    const Dims cache_shape{num_blocks, bs, c.kv_heads, c.head_size};
    key_cache = random_tensor(cache_shape, c.dtype, rng, c.layout);
    value_cache = random_tensor(cache_shape, c.dtype, rng, c.layout);
    kc_ = to_doubles(key_cache), vc_ = to_doubles(value_cache);
    std::int64_t next = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t j = 0; j < c.kv_lens[b]; j += bs) {
        table[b * max_blocks + j / bs] = order[next++];
      }
    }
    block_table = int32_tensor(table, {batch, max_blocks});
    table_ = std::move(table), cu_kv_ = cu_kv_values, row_ = c.kv_heads * c.head_size;
    max_blocks_ = max_blocks, block_size_ = bs;
    fill_caches();
  }

  // Writes q, k and v (after a test changed them, e.g. to NaN) back into the tensors: query,
  // packed key/value and the paged caches.
  void refresh() {
    from_doubles(query, q), from_doubles(key, k), from_doubles(value, v);
    if (block_size_ > 0) fill_caches();
  }

  std::vector<double> expected(const AttentionCase& c) const {
    return reference::attention(q, k, v, cumulative(c.q_lens), cumulative(c.kv_lens), c.spec());
  }

 private:
  void fill_caches() {
    for (std::size_t b = 0; b + 1 < cu_kv_.size(); ++b) {
      for (std::int64_t t = cu_kv_[b]; t < cu_kv_[b + 1]; ++t) {
        const std::int64_t j = t - cu_kv_[b];
        const std::int64_t slot =
            table_[b * max_blocks_ + j / block_size_] * block_size_ + j % block_size_;
        std::copy(&k[t * row_], &k[t * row_] + row_, &kc_[slot * row_]);
        std::copy(&v[t * row_], &v[t * row_] + row_, &vc_[slot * row_]);
      }
    }
    from_doubles(key_cache, kc_);
    from_doubles(value_cache, vc_);
  }

  std::vector<double> kc_, vc_;  // the caches' float64 values (unreferenced rows random)
  std::vector<std::int64_t> table_, cu_kv_;
  std::int64_t row_ = 0, max_blocks_ = 0, block_size_ = 0;
};

}  // namespace tileops::testing
