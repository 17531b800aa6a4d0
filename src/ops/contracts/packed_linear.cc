#include "tileops/ops/packed_linear.h"

#include <string>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/checked_size.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kPack = "pack_linear_weight";
constexpr std::string_view kLinear = "linear_packed";

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
  check.usable(packed, "packed");
  check.dtype_is(packed, "packed", dtype, "same as the weight it packs");
  check.rank_is(packed, "packed", 1);
  check.shape_is(packed, "packed", Dims{numel}, origin);
  if (numel > 1 && packed.stride(0) != 1) {
    check.fail(ErrorKind::kInvalidArgument, "packed", "a contiguous tensor (stride 1)",
               packed.describe());
  }
}

Problem pack_problem(const Tensor& weight, const Tensor& packed) {
  const ArgCheck check(kPack);
  check.usable(weight, "weight");
  check.standard_float(weight, "weight");
  check.rank_is(weight, "weight", 2);
  check_packed(check, packed, weight.dtype(),
               packed_numel(weight.size(0), weight.size(1), weight.dtype(),
                            "pack_linear_weight: argument 'weight': its packed form"),
               "packed_linear_weight_numel(N, K, dtype) for the [N, K] weight");
  check.writable(packed, "packed");
  check.outputs_do_not_overlap({{weight, "weight"}}, {{packed, "packed"}}, false);
  return Problem{kPack, {TensorDesc::of(weight), TensorDesc::of(packed)}, {}};
}

void check_memory(const Tensor& input, const Tensor& packed, const Tensor& bias,
                  const Tensor& out) {
  const ArgCheck check(kLinear);
  check.outputs_do_not_overlap({{input, "input"}, {packed, "packed"}}, {{out, "out"}}, false);
  if (present(bias)) check.outputs_do_not_overlap({{bias, "bias"}}, {{out, "out"}}, false);
}

Problem linear_problem(const Tensor& input, const Tensor& packed, const Tensor& bias,
                       const Tensor& out) {
  const ArgCheck check(kLinear);
  check.usable(input, "input");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.dtype_is(out, "out", input.dtype(), "same as 'input'");
  check.rank_at_least(input, "input", 1);
  check.rank_is(out, "out", input.rank());
  const std::int64_t k = input.size(-1);
  const std::int64_t n = out.size(-1);
  Dims expected = input.shape();
  expected[expected.size() - 1] = n;
  check.shape_is(out, "out", expected, "input's shape with the last dim N");
  check_packed(check, packed, input.dtype(),
               packed_numel(n, k, input.dtype(),
                            "linear_packed: argument 'packed': the packed form of [N, K]"),
               "pack_linear_weight's form of an [N, K] weight, N = out's last dim and K = "
               "input's");
  if (present(bias)) {
    check.usable(bias, "bias");
    check.standard_float(bias, "bias");
    check.shape_is(bias, "bias", Dims{n}, "[N], N = out's last dim");
  }
  check.writable(out, "out");
  check_memory(input, packed, bias, out);
  return Problem{kLinear,
                 {TensorDesc::of(input), TensorDesc::of(packed),
                  present(bias) ? TensorDesc::of(bias) : TensorDesc::absent(), TensorDesc::of(out)},
                 {}};
}

}  // namespace

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
  const Tensor tensors[] = {weight, packed};
  run_problem(pack_problem(weight, packed), tensors, ctx);
}

void linear_packed(const Tensor& input, const Tensor& packed, const Tensor& bias, const Tensor& out,
                   const Context& ctx) {
  const Tensor tensors[] = {input, packed, bias, out};
  run_problem(linear_problem(input, packed, bias, out), tensors, ctx);
}

LinearPacked::LinearPacked(const Tensor& input, const Tensor& packed, const Tensor& bias,
                           const Tensor& out, int implementation_index)
    : prepared_(linear_problem(input, packed, bias, out), {"input", "packed", "bias", "out"},
                implementation_index) {}

void LinearPacked::operator()(const Tensor& input, const Tensor& packed, const Tensor& bias,
                              const Tensor& out, const Context& ctx) const {
  check_memory(input, packed, bias, out);
  const Tensor tensors[] = {input, packed, bias, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
