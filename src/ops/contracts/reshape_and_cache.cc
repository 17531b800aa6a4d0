// reshape_and_cache beyond its declaration, and its combined-cache form; the typed function
// and class are generated.
#include "tileops/ops/reshape_and_cache.h"

#include <string>

#include "src/ops/contracts/reshape_and_cache.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "reshape_and_cache";

// Tensors {key, value, key_cache, value_cache, slot_mapping}, named as in `decl`. The slots'
// values are data: the implementation checks them before writing anything.
template <const OpDecl* decl>
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> /*attrs*/) {
  const std::int64_t tokens = t[4].size(0);
  for (int i : {0, 1}) {
    if (t[i].size(0) != tokens) {
      check.fail(ErrorKind::kInvalidArgument, i == 0 ? "key" : "value",
                 "[T, Hkv, D] with T = " + std::to_string(tokens) + " (slot_mapping's length)",
                 t[i].shape().to_string());
    }
  }
  if (t[1].size(1) != t[0].size(1)) {
    check.fail(ErrorKind::kInvalidArgument, "value",
               "Hkv = " + std::to_string(t[0].size(1)) + " heads (as key)",
               t[1].shape().to_string());
  }
  const Tensor& key_cache = t[2];
  for (int i : {0, 1}) {
    const Dims expected{key_cache.size(0), key_cache.size(1), t[i].size(1), t[i].size(2)};
    check.shape_is(t[2 + i], decl->args[2 + i].name, expected,
                   "[num_blocks, block_size, Hkv, D] of " + std::string(i == 0 ? "key" : "value"));
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
  combined.call({key, value, half_of(kv_cache, 0), half_of(kv_cache, 1), slot_mapping}, {}, ctx);
}

}  // namespace tileops::ops
