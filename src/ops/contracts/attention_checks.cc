#include "src/ops/contracts/attention_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tileops::ops {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// Problem attributes are doubles: integers are exact up to 2^53.
constexpr std::int64_t kMaxExactAttribute = std::int64_t{1} << 53;

// A declared integer attribute back as int64, saturating (INT64_MAX arrives as 2^63).
std::int64_t as_int(double v) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (v >= kTwoTo63) return std::numeric_limits<std::int64_t>::max();
  if (v < -kTwoTo63) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

}  // namespace

bool attention_present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

std::array<double, kAttrCount + 1> attention_values(const AttentionAttributes& a) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  return {d(a.num_heads),
          d(a.num_kv_heads),
          d(a.head_size),
          a.scale,
          a.causal ? 1.0 : 0.0,
          d(a.window_left),
          d(a.window_right),
          d(a.block_size),
          a.sliding_window ? d(*a.sliding_window) : kFromCheck};
}

std::int64_t resolve_attention_attributes(const ArgCheck& check, std::span<double> attributes,
                                          const Tensor& query, const Tensor& key) {
  // None (kFromCheck) takes the size the shape says; 0 when the tensor has no such dim.
  const auto given_or = [&](int attr, const Tensor& t, int dim) {
    if (!std::isnan(attributes[attr])) return as_int(attributes[attr]);
    return t.rank() >= -dim ? t.size(dim) : std::int64_t{0};
  };
  const std::int64_t num_heads = given_or(kAttrHeads, query, -2);
  const std::int64_t num_kv_heads = given_or(kAttrKvHeads, key, -2);
  const std::int64_t head_size = given_or(kAttrHeadSize, query, -1);
  const std::int64_t query_heads = query.size(1);
  const std::int64_t query_head_size = query.size(2);
  const double given_scale = attributes[kAttrScale];
  const bool causal = attributes[kAttrCausal] != 0;
  const double sliding = attributes[kAttrCount];  // the folded sliding_window
  std::int64_t left = as_int(attributes[kAttrWindowLeft]);
  std::int64_t right = as_int(attributes[kAttrWindowRight]);
  if (num_heads != query_heads || num_heads < 1) {
    check.fail(ErrorKind::kInvalidArgument, "num_heads",
               "the query's head count " + str(query_heads) + ", >= 1", str(num_heads));
  }
  if (num_kv_heads <= 0 || num_heads % num_kv_heads != 0) {
    check.fail(ErrorKind::kInvalidArgument, "num_kv_heads",
               "a positive divisor of num_heads = " + str(num_heads), str(num_kv_heads));
  }
  if (head_size != query_head_size || head_size <= 0 || head_size > 256) {
    check.fail(ErrorKind::kInvalidArgument, "head_size",
               "the query's last dim " + str(query_head_size) + ", in [1, 256]", str(head_size));
  }
  if (!std::isfinite(given_scale)) {
    check.fail(ErrorKind::kInvalidArgument, "scale", "a finite number (0: 1/sqrt(head_size))",
               std::to_string(given_scale));
  }
  if (left < -1 || right < -1) {
    check.fail(ErrorKind::kInvalidArgument, left < -1 ? "window_left" : "window_right",
               ">= -1 (-1: unbounded)", str(left < -1 ? left : right));
  }
  if (!std::isnan(sliding)) {
    const std::int64_t w = as_int(sliding);
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
  if (causal) right = 0;
  attributes[kAttrHeads] = exact_attribute(check, num_heads, "num_heads");
  attributes[kAttrKvHeads] = exact_attribute(check, num_kv_heads, "num_kv_heads");
  attributes[kAttrHeadSize] = exact_attribute(check, head_size, "head_size");
  attributes[kAttrScale] =
      given_scale != 0 ? given_scale : 1.0 / std::sqrt(static_cast<double>(head_size));
  attributes[kAttrCausal] = causal ? 1.0 : 0.0;
  // A window of 2^53 keys or more sees every key of any sequence that memory can hold: stored
  // as 2^53, it stays exact as a double (INT64_MAX would round to 2^63, beyond int64).
  attributes[kAttrWindowLeft] = static_cast<double>(std::min(left, kMaxExactAttribute));
  attributes[kAttrWindowRight] = static_cast<double>(std::min(right, kMaxExactAttribute));
  const std::int64_t block_size = as_int(attributes[kAttrBlockSize]);
  attributes[kAttrBlockSize] = 0;
  return block_size;
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
  check.dtype_is(t, arg, DataType::kInt32);
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
