// pack_linear_weight and linear_packed beyond their declarations; linear_packed's typed
// function and class are generated.
#include "tileops/ops/packed_linear.h"

#include <string>

#include "src/ops/contracts/linear_packed.decl.h"
#include "src/ops/contracts/pack_linear_weight.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// packed_linear_weight_numel for validated n, k >= 0 and a float dtype; a count (or its bytes)
// beyond int64 is an InvalidArgument naming `what`, never a wrapped size for the packed buffer.
std::int64_t packed_numel(std::int64_t n, std::int64_t k, DataType dtype, std::string_view what) {
  if (n == 0 || k == 0) return 0;  // an empty weight packs to nothing, whatever the other extent
  const std::int64_t n_padded = checked_mul(n / 16 + (n % 16 != 0 ? 1 : 0), 16, what);
  const std::int64_t k_padded = dtype == DataType::kBFloat16 ? checked_add(k, k % 2, what) : k;
  const std::int64_t numel = checked_mul(n_padded, k_padded, what);
  checked_bytes(numel, size_of(dtype), what);
  return numel;
}

// A packed weight: rank 1, contiguous, `dtype`, exactly `numel` elements.
void check_packed(const ArgCheck& check, const Tensor& packed, DataType dtype, std::int64_t numel,
                  std::string_view origin) {
  check.dtype_is(packed, "packed", dtype, "same as the weight it packs");
  check.rank_is(packed, "packed", 1);
  check.shape_is(packed, "packed", Dims{numel}, origin);
  if (numel > 1 && packed.stride(0) != 1) {
    check.fail(ErrorKind::kInvalidArgument, "packed", "a contiguous tensor (stride 1)",
               packed.describe());
  }
}

void check_pack(const ArgCheck& check, std::span<const Tensor> t, std::span<double> /*attrs*/) {
  const Tensor& w = t[tensor_index(decls::pack_linear_weight, "weight")];
  check_packed(check, t[tensor_index(decls::pack_linear_weight, "packed")], w.dtype(),
               packed_numel(w.size(0), w.size(1), w.dtype(),
                            "pack_linear_weight: argument 'weight': its packed form"),
               "packed_linear_weight_numel(N, K, dtype) for the [N, K] weight");
}

// N is out's last dim.
void check_linear(const ArgCheck& check, std::span<const Tensor> t, std::span<double> /*attrs*/) {
  const Tensor& input = t[tensor_index(decls::linear_packed, "input")];
  const Tensor& out = t[tensor_index(decls::linear_packed, "out")];
  const Tensor& bias = t[tensor_index(decls::linear_packed, "bias")];
  check.rank_is(out, "out", input.rank());
  const std::int64_t k = input.size(-1);
  const std::int64_t n = out.size(-1);
  Dims expected = input.shape();
  expected[expected.size() - 1] = n;
  check.shape_is(out, "out", expected, "input's shape with the last dim N");
  check_packed(check, t[tensor_index(decls::linear_packed, "packed")], input.dtype(),
               packed_numel(n, k, input.dtype(),
                            "linear_packed: argument 'packed': the packed form of [N, K]"),
               "pack_linear_weight's form of an [N, K] weight, N = out's last dim and K = "
               "input's");
  if (present(bias)) check.shape_is(bias, "bias", Dims{n}, "[N], N = out's last dim");
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp pack_linear_weight{decls::pack_linear_weight, {check_pack}};
extern constinit const DeclaredOp linear_packed{decls::linear_packed, {check_linear}};
}  // namespace contracts

std::int64_t packed_linear_weight_numel(std::int64_t n, std::int64_t k, DataType dtype) {
  const ArgCheck check("packed_linear_weight_numel");
  if (n < 0 || k < 0) {
    check.fail(ErrorKind::kInvalidArgument, n < 0 ? "n" : "k", ">= 0",
               std::to_string(n < 0 ? n : k));
  }
  if (dtype != DataType::kFloat32 && dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
    check.fail(ErrorKind::kInvalidArgument, "dtype", "float32, float16 or bfloat16",
               std::string(name_of(dtype)));
  }
  return packed_numel(n, k, dtype, "packed_linear_weight_numel: arguments 'n' and 'k'");
}

void pack_linear_weight(const Tensor& weight, const Tensor& packed, const Context& ctx) {
  contracts::pack_linear_weight.call({weight, packed}, {}, ctx);
}

}  // namespace tileops::ops
