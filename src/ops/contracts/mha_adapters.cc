// flash-attn's Python entry points as thin adapters over flash_attention: they only translate
// the argument lists (heads from the shapes, per-sequence cache lengths to cumulative ones).
#include <cstdint>
#include <string>
#include <vector>

#include "src/ops/contracts/attention_checks.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/flash_attention.h"

namespace tileops::ops {

void mha_varlen_fwd(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_k,
                    const Tensor& block_table, std::int64_t /*max_seqlen_q*/,
                    std::int64_t /*max_seqlen_k*/, double softmax_scale, bool is_causal,
                    std::int64_t window_size_left, std::int64_t window_size_right,
                    const Context& ctx) {
  const ArgCheck check("mha_varlen_fwd");
  check.rank_is(q, "q", 3);
  check.rank_at_least(k, "k", 3);
  AttentionAttributes attrs;
  attrs.num_heads = q.size(1);
  attrs.num_kv_heads = k.size(-2);
  attrs.head_size = q.size(2);
  attrs.scale = softmax_scale;
  attrs.causal = is_causal;
  attrs.window_left = window_size_left;
  attrs.window_right = window_size_right;
  flash_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, block_table, attrs, out, ctx);
}

void mha_fwd_kvcache(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const Tensor& cache_seqlens, const Tensor& block_table, const Tensor& out,
                     double softmax_scale, bool is_causal, std::int64_t window_size_left,
                     std::int64_t window_size_right, const Context& ctx) {
  const ArgCheck check("mha_fwd_kvcache");
  check.usable(q, "q");
  check.rank_is(q, "q", 4);
  check.rank_is(k_cache, "k_cache", 4);
  check.shape_is(out, "out", q.shape(), "same as 'q' [B, Sq, H, D]");
  const std::int64_t batch = q.size(0);
  const std::int64_t sq = q.size(1);
  check_index_tensor(check, cache_seqlens, "cache_seqlens", Dims{batch}, "[B]");
  // [B, Sq, H, D] as packed [B·Sq, H, D]: B and Sq must merge into one dim.
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{q, "q"}, {out, "out"}}) {
    if (batch > 1 && t.stride(0) != sq * t.stride(1)) {
      check.fail(ErrorKind::kInvalidArgument, name, "stride(0) == size(1)·stride(1)", t.describe());
    }
  }
  // The cumulative lengths are int32: their totals must fit, not wrap.
  constexpr std::int64_t kInt32Max = INT32_MAX;
  if (checked_mul(batch, sq, "mha_fwd_kvcache: argument 'q': B·Sq") > kInt32Max) {
    check.fail(ErrorKind::kInvalidArgument, "q", "B·Sq <= 2^31 - 1 query rows", q.describe());
  }
  std::vector<std::int32_t> cu_q(batch + 1), cu_k(batch + 1);
  std::int64_t total_k = 0;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t len = index_at(cache_seqlens, b);
    if (len < 0) {
      check.fail(ErrorKind::kInvalidArgument, "cache_seqlens", "lengths >= 0",
                 std::to_string(len) + " for sequence " + std::to_string(b));
    }
    if (len > kInt32Max - total_k) {  // an int64 length may be beyond int32 on its own
      check.fail(ErrorKind::kInvalidArgument, "cache_seqlens", "lengths summing to <= 2^31 - 1",
                 "a sum of " + std::to_string(total_k) + " + " + std::to_string(len) +
                     " at sequence " + std::to_string(b));
    }
    total_k += len;
    cu_q[b + 1] = static_cast<std::int32_t>((b + 1) * sq);
    cu_k[b + 1] = static_cast<std::int32_t>(total_k);
  }
  const auto merged = [&](const Tensor& t) {
    return t.with_shape(Dims{batch * sq, t.size(2), t.size(3)},
                        Dims{t.stride(1), t.stride(2), t.stride(3)});
  };
  AttentionAttributes attrs;
  attrs.num_heads = q.size(2);
  attrs.num_kv_heads = k_cache.size(2);
  attrs.head_size = q.size(3);
  attrs.scale = softmax_scale;
  attrs.causal = is_causal;
  attrs.window_left = window_size_left;
  attrs.window_right = window_size_right;
  flash_attention(
      merged(q), k_cache, v_cache, Tensor(cu_q.data(), Dims{batch + 1}, DataType::kInt32),
      Tensor(cu_k.data(), Dims{batch + 1}, DataType::kInt32), block_table, attrs, merged(out), ctx);
}

}  // namespace tileops::ops
