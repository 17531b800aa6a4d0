// reshape_and_cache beyond its declaration, and its combined-cache form; the typed function
// and class are generated.
#include "tileops/ops/reshape_and_cache.h"

#include <string>
#include <string_view>

#include "src/ops/contracts/reshape_and_cache.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "reshape_and_cache";

constexpr int kKey = tensor_index(decls::reshape_and_cache, "key");
constexpr int kValue = tensor_index(decls::reshape_and_cache, "value");
constexpr int kKeyCache = tensor_index(decls::reshape_and_cache, "key_cache");
constexpr int kValueCache = tensor_index(decls::reshape_and_cache, "value_cache");
constexpr int kSlotMapping = tensor_index(decls::reshape_and_cache, "slot_mapping");
constexpr int kKScale = tensor_index(decls::reshape_and_cache, "k_scale");
constexpr int kVScale = tensor_index(decls::reshape_and_cache, "v_scale");
// Key then value: the rows given, the cache they go to and its scale.
constexpr int kRows[] = {kKey, kValue};
constexpr int kCaches[] = {kKeyCache, kValueCache};
constexpr int kScales[] = {kKScale, kVScale};

bool is_fp8(DataType d) { return d == DataType::kFloat8E4M3FN || d == DataType::kFloat8E5M2; }

// A cache of `rows` [T, Hkv, D]: [num_blocks, block_size, Hkv, D], or with D split in two
// [.., Hkv, D / x, x] (vLLM's key cache [num_blocks, Hkv, D / x, block_size, x] permuted into
// this order), with the key cache's blocks.
void check_cache(const ArgCheck& check, const Tensor& cache, std::string_view arg,
                 const Tensor& rows, const Tensor& key_cache, std::string_view of) {
  const Dims expected{key_cache.size(0), key_cache.size(1), rows.size(1), rows.size(2)};
  const std::string why = "[num_blocks, block_size, Hkv, D] of " + std::string(of) +
                          " (or [num_blocks, block_size, Hkv, D / x, x])";
  if (cache.rank() == 4) {
    check.shape_is(cache, arg, expected, why);
    return;
  }
  const std::int64_t x = cache.rank() == 5 ? cache.size(4) : 0;
  if (x < 1 || cache.size(3) * x != expected[3] || cache.size(0) != expected[0] ||
      cache.size(1) != expected[1] || cache.size(2) != expected[2]) {
    check.fail(ErrorKind::kInvalidArgument, arg, why + " with " + expected.to_string(),
               cache.shape().to_string());
  }
}

// The slots' values are data: the implementation checks them before writing anything. Names
// as in `decl` (the combined form names the caches kv_cache's halves).
template <const OpDecl* decl>
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> /*attrs*/) {
  const std::int64_t tokens = t[kSlotMapping].size(0);
  for (int i : kRows) {
    if (t[i].size(0) != tokens) {
      check.fail(ErrorKind::kInvalidArgument, i == kKey ? "key" : "value",
                 "[T, Hkv, D] with T = " + std::to_string(tokens) + " (slot_mapping's length)",
                 t[i].shape().to_string());
    }
  }
  if (t[kValue].size(1) != t[kKey].size(1)) {
    check.fail(ErrorKind::kInvalidArgument, "value",
               "Hkv = " + std::to_string(t[kKey].size(1)) + " heads (as key)",
               t[kValue].shape().to_string());
  }
  for (int i : {0, 1}) {
    const std::string_view cache = decl->args[kCaches[i]].name;
    const char* rows = i == 0 ? "key" : "value";
    check_cache(check, t[kCaches[i]], cache, t[kRows[i]], t[kKeyCache], rows);
    // Rows are copied bit for bit into a cache of their dtype, or quantised into an fp8 one.
    const DataType from = t[kRows[i]].dtype(), to = t[kCaches[i]].dtype();
    if (to != from && !(is_fp8(to) && is_standard_float(from))) {
      check.fail(ErrorKind::kInvalidType, cache,
                 std::string(name_of(from)) + " (as " + rows +
                     "), or float8_e4m3fn/float8_e5m2 for float32/float16/bfloat16 rows",
                 std::string(name_of(to)));
    }
    const Tensor& scale = t[kScales[i]];
    if ((scale.data() != nullptr || scale.rank() != 0) && scale.numel() != 1) {
      check.fail(ErrorKind::kInvalidArgument, decl->args[kScales[i]].name,
                 "one element (shape [] or [1])", scale.shape().to_string());
    }
  }
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp reshape_and_cache{decls::reshape_and_cache,
                                                    {check<&decls::reshape_and_cache>}};
}  // namespace contracts

namespace {

// The combined form's contract: the same, naming the caches as kv_cache's halves.
constexpr OpDecl combined_decl() {
  OpDecl d = decls::reshape_and_cache;
  d.args[2].name = "kv_cache[0]";
  d.args[3].name = "kv_cache[1]";
  return d;
}
constexpr OpDecl kCombined = combined_decl();
constinit const DeclaredOp combined{kCombined, {check<&kCombined>}};

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

void reshape_and_cache(const Tensor& key, const Tensor& value, const Tensor& kv_cache,
                       const Tensor& slot_mapping, const Context& ctx) {
  combined.call(
      {key, value, half_of(kv_cache, 0), half_of(kv_cache, 1), slot_mapping, Tensor(), Tensor()},
      {}, ctx);
}

}  // namespace tileops::ops
