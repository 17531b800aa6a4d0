#include "tileops/ops/reshape_and_cache.h"

#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "reshape_and_cache";

// The caches' names in errors (the combined form names its two halves).
struct CacheNames {
  std::string_view key_cache = "key_cache";
  std::string_view value_cache = "value_cache";
};

void check_memory(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                  const Tensor& value_cache, const Tensor& slot_mapping, CacheNames names = {}) {
  ArgCheck(kOp).outputs_do_not_overlap(
      {{key, "key"}, {value, "value"}, {slot_mapping, "slot_mapping"}},
      {{key_cache, names.key_cache}, {value_cache, names.value_cache}}, false);
}

void check_rows(const ArgCheck& check, const Tensor& rows, std::string_view arg,
                std::int64_t tokens) {
  check.usable(rows, arg);
  check.rank_is(rows, arg, 3);
  if (rows.size(0) != tokens) {
    check.fail(ErrorKind::kInvalidArgument, arg,
               "[T, Hkv, D] with T = " + std::to_string(tokens) + " (slot_mapping's length)",
               rows.shape().to_string());
  }
}

void check_cache(const ArgCheck& check, const Tensor& cache, std::string_view arg,
                 const Tensor& rows, std::string_view rows_arg, const Tensor& other_cache) {
  check.usable(cache, arg);
  check.dtype_is(cache, arg, rows.dtype(), "same as " + std::string(rows_arg));
  check.rank_is(cache, arg, 4);
  const Dims expected{other_cache.size(0), other_cache.size(1), rows.size(1), rows.size(2)};
  check.shape_is(cache, arg, expected,
                 "[num_blocks, block_size, Hkv, D] of " + std::string(rows_arg));
  check.writable(cache, arg);
}

// The slots' values are data: the implementation checks them before writing anything.
Problem make_problem(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                     const Tensor& value_cache, const Tensor& slot_mapping, CacheNames names = {}) {
  const ArgCheck check(kOp);
  check.usable(slot_mapping, "slot_mapping");
  check.dtype_in(slot_mapping, "slot_mapping", {DataType::kInt32, DataType::kInt64});
  check.rank_is(slot_mapping, "slot_mapping", 1);
  const std::int64_t tokens = slot_mapping.size(0);
  check_rows(check, key, "key", tokens);
  check_rows(check, value, "value", tokens);
  if (value.size(1) != key.size(1)) {
    check.fail(ErrorKind::kInvalidArgument, "value",
               "Hkv = " + std::to_string(key.size(1)) + " heads (as key)",
               value.shape().to_string());
  }
  check.usable(key_cache, names.key_cache);
  check.rank_is(key_cache, names.key_cache, 4);
  check_cache(check, key_cache, names.key_cache, key, "key", key_cache);
  check_cache(check, value_cache, names.value_cache, value, "value", key_cache);
  check_memory(key, value, key_cache, value_cache, slot_mapping, names);
  return Problem{kOp,
                 {TensorDesc::of(key), TensorDesc::of(value), TensorDesc::of(key_cache),
                  TensorDesc::of(value_cache), TensorDesc::of(slot_mapping)},
                 {}};
}

// kv_cache[i] as a 4-D view, after checking the combined cache's own shape.
Tensor half_of(const Tensor& kv_cache, std::int64_t i) {
  const ArgCheck check(kOp);
  check.usable(kv_cache, "kv_cache");
  check.rank_is(kv_cache, "kv_cache", 5);
  if (kv_cache.size(0) != 2) {
    check.fail(ErrorKind::kInvalidArgument, "kv_cache", "[2, num_blocks, block_size, Hkv, D]",
               kv_cache.shape().to_string());
  }
  const Dims& shape = kv_cache.shape();
  const Dims& strides = kv_cache.strides();
  auto* base = static_cast<char*>(kv_cache.data());
  const auto offset = i * strides[0] * static_cast<std::int64_t>(kv_cache.element_size());
  return Tensor(
      base == nullptr ? nullptr : base + offset, Dims{shape[1], shape[2], shape[3], shape[4]},
      Dims{strides[1], strides[2], strides[3], strides[4]}, kv_cache.dtype(), kv_cache.device());
}

}  // namespace

void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                       const Tensor& value_cache, const Tensor& slot_mapping, const Context& ctx) {
  const Tensor tensors[] = {key, value, key_cache, value_cache, slot_mapping};
  run_problem(make_problem(key, value, key_cache, value_cache, slot_mapping), tensors, ctx);
}

void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& kv_cache,
                       const Tensor& slot_mapping, const Context& ctx) {
  const Tensor key_cache = half_of(kv_cache, 0);
  const Tensor value_cache = half_of(kv_cache, 1);
  const Tensor tensors[] = {key, value, key_cache, value_cache, slot_mapping};
  run_problem(make_problem(key, value, key_cache, value_cache, slot_mapping,
                           {"kv_cache[0]", "kv_cache[1]"}),
              tensors, ctx);
}

ReshapeAndCache::ReshapeAndCache(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                                 const Tensor& value_cache, const Tensor& slot_mapping,
                                 int implementation_index)
    : prepared_(make_problem(key, value, key_cache, value_cache, slot_mapping),
                {"key", "value", "key_cache", "value_cache", "slot_mapping"},
                implementation_index) {}

void ReshapeAndCache::operator()(const Tensor& key, const Tensor& value, const Tensor& key_cache,
                                 const Tensor& value_cache, const Tensor& slot_mapping,
                                 const Context& ctx) const {
  check_memory(key, value, key_cache, value_cache, slot_mapping);
  const Tensor tensors[] = {key, value, key_cache, value_cache, slot_mapping};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
