// quantize_weight, pack_quantized_codes and linear_quantized beyond their declarations:
// qweight's size from the attributes, and the header of a given qweight read and validated on
// every call (it is data: the class forms repeat it in check_data). Typed functions and
// classes are generated.
#include "tileops/ops/quantized_linear.h"

#include <cmath>
#include <string>

#include "src/ops/contracts/linear_quantized.decl.h"
#include "src/ops/contracts/pack_quantized_codes.decl.h"
#include "src/ops/contracts/quantize_weight.decl.h"
#include "src/ops/contracts/quantized_format.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr int kBits = attribute_index(decls::quantize_weight, "bits");
constexpr int kGroupSize = attribute_index(decls::quantize_weight, "group_size");
constexpr int kSymmetric = attribute_index(decls::quantize_weight, "symmetric");
constexpr int kWeight = tensor_index(decls::quantize_weight, "weight");
constexpr int kQweightOut = tensor_index(decls::quantize_weight, "qweight");
constexpr int kCodes = tensor_index(decls::pack_quantized_codes, "codes");
constexpr int kScales = tensor_index(decls::pack_quantized_codes, "scales");
constexpr int kZeros = tensor_index(decls::pack_quantized_codes, "zeros");
constexpr int kPackedOut = tensor_index(decls::pack_quantized_codes, "qweight");
constexpr int kPackBits = attribute_index(decls::pack_quantized_codes, "bits");
constexpr int kPackGroupSize = attribute_index(decls::pack_quantized_codes, "group_size");
constexpr int kInput = tensor_index(decls::linear_quantized, "input");
constexpr int kQweight = tensor_index(decls::linear_quantized, "qweight");
constexpr int kBias = tensor_index(decls::linear_quantized, "bias");
constexpr int kOut = tensor_index(decls::linear_quantized, "out");

// output_shape runs before the declared checks (Python allocates first): the integers are
// bounded here too before any cast.
int int_attribute(std::string_view op, std::string_view name, double v) {
  if (!(v == std::trunc(v) && std::fabs(v) < 2147483648.0)) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, name, "an int32 value",
                         std::to_string(v));
  }
  return static_cast<int>(v);
}

QuantizedLayout layout_of(std::string_view op, const Tensor& weight,
                          std::span<const double> attributes) {
  return quantized_layout(
      op, weight.size(0), weight.size(1), int_attribute(op, "bits", attributes[kBits]),
      int_attribute(op, "group_size", attributes[kGroupSize]), attributes[kSymmetric] != 0.0);
}

void contiguous_bytes(const ArgCheck& check, const Tensor& t, std::string_view arg) {
  if (t.numel() > 1 && t.stride(0) != 1) {
    check.fail(ErrorKind::kInvalidArgument, arg, "a contiguous tensor (stride 1)", t.describe());
  }
}

// Tensors {weight, qweight}.
void check_quantize(const ArgCheck& check, std::span<const Tensor> t,
                    std::span<double> attributes) {
  const QuantizedLayout l = layout_of(check.op(), t[kWeight], attributes);
  check.rank_is(t[kQweightOut], "qweight", 1);
  check.shape_is(t[kQweightOut], "qweight", Dims{l.total_bytes},
                 "quantized_weight_bytes(N, K, bits, group_size, symmetric)");
  contiguous_bytes(check, t[kQweightOut], "qweight");
}

Dims quantize_output_shape(std::string_view op, int, std::span<const Tensor> t,
                           std::span<const double> attributes) {
  ArgCheck(op).rank_is(t[kWeight], "weight",
                       2);  // before the declared rules: Python allocates first
  return Dims{layout_of(op, t[kWeight], attributes).total_bytes};
}

bool given(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// pack_quantized_codes: the layout of its codes; zero points when zeros are given.
QuantizedLayout packed_layout_of(std::string_view op, std::span<const Tensor> t,
                                 std::span<const double> attributes) {
  const ArgCheck check(op);
  check.rank_is(t[kCodes], "codes", 2);  // before the declared rules: Python allocates first
  const int bits = int_attribute(op, "bits", attributes[kPackBits]);
  if (bits == 8 && given(t[kZeros])) {
    check.fail(ErrorKind::kInvalidArgument, "zeros", "none for bits = 8 (int8 is symmetric)",
               t[kZeros].describe());
  }
  return quantized_layout(op, t[kCodes].size(0), t[kCodes].size(1), bits,
                          int_attribute(op, "group_size", attributes[kPackGroupSize]),
                          /*symmetric=*/!given(t[kZeros]));
}

// Tensors {codes, scales, zeros, qweight}.
void check_pack(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attributes) {
  const QuantizedLayout l = packed_layout_of(check.op(), t, attributes);
  check.dtype_is(t[kCodes], "codes", l.bits == 4 ? DataType::kUInt8 : DataType::kInt8,
                 l.bits == 4 ? "uint8 for bits = 4 (codes 0..15)" : "int8 for bits = 8");
  const Dims groups{l.n, l.group_size == 0 ? 1 : l.k / l.group_size};
  const char* why = "[N, K / group_size] ([N, 1] per channel)";
  check.shape_is(t[kScales], "scales", groups, why);
  if (given(t[kZeros])) check.shape_is(t[kZeros], "zeros", groups, why);
  check.rank_is(t[kPackedOut], "qweight", 1);
  check.shape_is(t[kPackedOut], "qweight", Dims{l.total_bytes},
                 "quantized_weight_bytes(N, K, bits, group_size, symmetric = zeros omitted)");
  contiguous_bytes(check, t[kPackedOut], "qweight");
}

Dims pack_output_shape(std::string_view op, int, std::span<const Tensor> t,
                       std::span<const double> attributes) {
  return Dims{packed_layout_of(op, t, attributes).total_bytes};
}

// qweight's header, read once its memory is known to be usable and contiguous.
QuantizedLayout header_of(const ArgCheck& check, const Tensor& qweight) {
  check.dtype_is(qweight, "qweight", DataType::kUInt8);
  check.rank_is(qweight, "qweight", 1);
  check.usable(qweight, "qweight");
  contiguous_bytes(check, qweight, "qweight");
  return read_quantized_header(check.op(), "qweight", qweight.data(), qweight.numel());
}

// Tensors {input, qweight, bias, out}.
void check_linear_data(const ArgCheck& check, std::span<const Tensor> t) {
  const Tensor& input = t[kInput];
  const QuantizedLayout l = header_of(check, t[kQweight]);
  if (input.size(-1) != l.k) {
    check.fail(ErrorKind::kInvalidArgument, "input",
               "last dim K = " + std::to_string(l.k) + " (qweight's header)", input.describe());
  }
  Dims expected = input.shape();
  expected[expected.size() - 1] = l.n;
  check.shape_is(t[kOut], "out", expected, "input's shape with the last dim N of qweight's header");
  if (t[kBias].data() != nullptr || t[kBias].rank() != 0) {
    check.shape_is(t[kBias], "bias", Dims{l.n}, "[N], N of qweight's header");
  }
}

void check_linear(const ArgCheck& check, std::span<const Tensor> t, std::span<double>) {
  check_linear_data(check, t);
}

Dims linear_output_shape(std::string_view op, int, std::span<const Tensor> t,
                         std::span<const double>) {
  const QuantizedLayout l = header_of(ArgCheck(op), t[kQweight]);
  Dims shape = t[kInput].shape();
  if (shape.size() == 0) return shape;  // the declared rank check names input
  shape[shape.size() - 1] = l.n;
  return shape;
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp quantize_weight{
    decls::quantize_weight, {.check = check_quantize, .output_shape = quantize_output_shape}};
extern constinit const DeclaredOp pack_quantized_codes{
    decls::pack_quantized_codes, {.check = check_pack, .output_shape = pack_output_shape}};
extern constinit const DeclaredOp linear_quantized{
    decls::linear_quantized,
    {.check = check_linear, .output_shape = linear_output_shape, .check_data = check_linear_data}};
}  // namespace contracts

std::int64_t quantized_weight_bytes(std::int64_t n, std::int64_t k, int bits, int group_size,
                                    bool symmetric) {
  return quantized_layout("quantized_weight_bytes", n, k, bits, group_size, symmetric).total_bytes;
}

}  // namespace tileops::ops
