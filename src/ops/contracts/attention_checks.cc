#include "src/ops/contracts/attention_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// Problem attributes are doubles: integers are exact up to 2^53.
constexpr std::int64_t kMaxExactAttribute = std::int64_t{1} << 53;

}  // namespace

bool attention_present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

std::array<double, kAttrCount + 1> attention_values(const AttentionAttributes& attrs,
                                                    const AttentionSlots& slots) {
  std::array<double, kAttrCount + 1> v{};
  v[slots.num_heads] = static_cast<double>(attrs.num_heads);
  v[slots.num_kv_heads] = static_cast<double>(attrs.num_kv_heads);
  v[slots.head_size] = static_cast<double>(attrs.head_size);
  v[slots.scale] = attrs.scale;
  v[slots.causal] = attrs.causal ? 1.0 : 0.0;
  v[slots.window_left] = static_cast<double>(attrs.window_left);
  v[slots.window_right] = static_cast<double>(attrs.window_right);
  v[slots.block_size] = static_cast<double>(attrs.block_size);
  v[slots.sliding_window] =
      attrs.sliding_window ? static_cast<double>(*attrs.sliding_window) : kFromCheck;
  return v;
}

AttentionAttributes declared_attention(std::span<const double> values, const AttentionSlots& slots,
                                       const Tensor& query, const Tensor& key, int key_heads_dim) {
  // kFromCheck (Python's None) takes the size the shape says; 0 when there is no such dim.
  const auto given_or = [&](int slot, const Tensor& t, int dim) {
    if (!std::isnan(values[slot])) return int64_attribute(values[slot]);
    return t.rank() >= -dim ? t.size(dim) : std::int64_t{0};
  };
  AttentionAttributes a;
  a.num_heads = given_or(slots.num_heads, query, -2);
  a.num_kv_heads = given_or(slots.num_kv_heads, key, key_heads_dim);
  a.head_size = given_or(slots.head_size, query, -1);
  a.scale = values[slots.scale];
  a.causal = values[slots.causal] != 0;
  a.window_left = int64_attribute(values[slots.window_left]);
  a.window_right = int64_attribute(values[slots.window_right]);
  a.block_size = int64_attribute(values[slots.block_size]);
  if (!std::isnan(values[slots.sliding_window])) {
    a.sliding_window = int64_attribute(values[slots.sliding_window]);
  }
  return a;
}

void store_layout(std::span<double> values, const std::vector<double>& layout,
                  const AttentionSlots& slots) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (static_cast<int>(i) != slots.sliding_window) values[i] = layout[next++];
  }
}

std::vector<double> resolve_attention_attributes(const ArgCheck& check,
                                                 const AttentionAttributes& attrs,
                                                 std::int64_t query_heads,
                                                 std::int64_t query_head_size) {
  if (attrs.num_heads != query_heads || attrs.num_heads < 1) {
    check.fail(ErrorKind::kInvalidArgument, "num_heads",
               "the query's head count " + str(query_heads) + ", >= 1", str(attrs.num_heads));
  }
  if (attrs.num_kv_heads <= 0 || attrs.num_heads % attrs.num_kv_heads != 0) {
    check.fail(ErrorKind::kInvalidArgument, "num_kv_heads",
               "a positive divisor of num_heads = " + str(attrs.num_heads),
               str(attrs.num_kv_heads));
  }
  if (attrs.head_size != query_head_size || attrs.head_size <= 0 || attrs.head_size > 256) {
    check.fail(ErrorKind::kInvalidArgument, "head_size",
               "the query's last dim " + str(query_head_size) + ", in [1, 256]",
               str(attrs.head_size));
  }
  if (!std::isfinite(attrs.scale)) {
    check.fail(ErrorKind::kInvalidArgument, "scale", "a finite number (0: 1/sqrt(head_size))",
               std::to_string(attrs.scale));
  }
  if (attrs.window_left < -1 || attrs.window_right < -1) {
    check.fail(ErrorKind::kInvalidArgument, attrs.window_left < -1 ? "window_left" : "window_right",
               ">= -1 (-1: unbounded)",
               str(attrs.window_left < -1 ? attrs.window_left : attrs.window_right));
  }
  std::int64_t left = attrs.window_left;
  std::int64_t right = attrs.window_right;
  if (attrs.sliding_window) {
    const std::int64_t w = *attrs.sliding_window;
    if (w < 1) {
      check.fail(ErrorKind::kInvalidArgument, "sliding_window", ">= 1 (or none)", str(w));
    }
    const bool given = left != -1 || right != -1;
    if (given && (left != w - 1 || right != 0)) {
      check.fail(ErrorKind::kInvalidArgument, "sliding_window",
                 "to agree with (window_left, window_right) = (" + str(w - 1) + ", 0)",
                 "sliding_window " + str(w) + " with (" + str(left) + ", " + str(right) + ")");
    }
    left = w - 1;
    right = 0;
  }
  if (attrs.causal) right = 0;
  const double scale =
      attrs.scale != 0 ? attrs.scale : 1.0 / std::sqrt(static_cast<double>(attrs.head_size));
  std::vector<double> out(kAttrCount, 0.0);
  out[kAttrHeads] = exact_attribute(check, attrs.num_heads, "num_heads");
  out[kAttrKvHeads] = exact_attribute(check, attrs.num_kv_heads, "num_kv_heads");
  out[kAttrHeadSize] = exact_attribute(check, attrs.head_size, "head_size");
  out[kAttrScale] = scale;
  out[kAttrCausal] = attrs.causal ? 1.0 : 0.0;
  // A window of 2^53 keys or more sees every key of any sequence that memory can hold: stored
  // as 2^53, it stays exact as a double (INT64_MAX would round to 2^63, beyond int64).
  out[kAttrWindowLeft] = static_cast<double>(std::min(left, kMaxExactAttribute));
  out[kAttrWindowRight] = static_cast<double>(std::min(right, kMaxExactAttribute));
  return out;
}

double exact_attribute(const ArgCheck& check, std::int64_t value, std::string_view arg) {
  if (value > kMaxExactAttribute || value < -kMaxExactAttribute) {
    check.fail(ErrorKind::kInvalidArgument, arg, "a magnitude of at most 2^53", str(value));
  }
  return static_cast<double>(value);
}

void check_index_tensor(const ArgCheck& check, const Tensor& t, std::string_view arg,
                        const Dims& shape, std::string_view why) {
  check.usable(t, arg);
  check.dtype_in(t, arg, {DataType::kInt32, DataType::kInt64});
  check.rank_is(t, arg, shape.size());
  check.shape_is(t, arg, shape, why);
}

void check_cumulative_lengths(const ArgCheck& check, const Tensor& cu, std::string_view arg,
                              std::int64_t total) {
  const std::int64_t n = cu.size(0);
  if (index_at(cu, 0) != 0) {
    check.fail(ErrorKind::kInvalidArgument, arg, "cumulative lengths starting at 0",
               "first value " + str(index_at(cu, 0)));
  }
  for (std::int64_t i = 1; i < n; ++i) {
    if (index_at(cu, i) < index_at(cu, i - 1)) {
      check.fail(
          ErrorKind::kInvalidArgument, arg, "non-decreasing cumulative lengths",
          "value " + str(index_at(cu, i)) + " at " + str(i) + " after " + str(index_at(cu, i - 1)));
    }
  }
  if (total >= 0 && index_at(cu, n - 1) != total) {
    check.fail(ErrorKind::kInvalidArgument, arg,
               "a last value equal to the token count " + str(total), str(index_at(cu, n - 1)));
  }
}

void check_block_ids(const ArgCheck& check, const Tensor& block_table, std::int64_t b,
                     std::int64_t length, std::int64_t block_size, std::int64_t num_blocks,
                     std::string_view arg) {
  const std::int64_t used = length / block_size + (length % block_size != 0 ? 1 : 0);
  for (std::int64_t k = 0; k < used; ++k) {
    const std::int64_t id = index_at(block_table, b, k);
    if (id < 0 || id >= num_blocks) {
      check.fail(ErrorKind::kInvalidArgument, arg, "block ids in [0, " + str(num_blocks) + ")",
                 str(id) + " at [" + str(b) + ", " + str(k) + "]");
    }
  }
}

}  // namespace tileops::ops
