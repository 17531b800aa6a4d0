// Interpreter: elementwise ops. Floats compute in double and round once to the result dtype
// (correctly rounded for float32 results, and at least as accurate as float32 compute for 16-bit
// ones); integers compute in int64 with two's-complement wrap to the dtype.
#include <cmath>
#include <limits>

#include "src/tl/interp/eval.h"

namespace tileops::tl::interp {
namespace {

double unary_float(UnaryOp op, double x) {
  constexpr double kSqrt1_2 = 0.70710678118654752440;
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  switch (op) {
    case UnaryOp::kAbs:
      return std::fabs(x);
    case UnaryOp::kCeil:
      return std::ceil(x);
    case UnaryOp::kFloor:
      return std::floor(x);
    case UnaryOp::kRound:
      return std::nearbyint(x);
    case UnaryOp::kTrunc:
      return std::trunc(x);
    case UnaryOp::kExp:
      return std::exp(x);
    case UnaryOp::kExp2:
      return std::exp2(x);
    case UnaryOp::kExpm1:
      return std::expm1(x);
    case UnaryOp::kLog:
      return std::log(x);
    case UnaryOp::kLog2:
      return std::log2(x);
    case UnaryOp::kLog1p:
      return std::log1p(x);
    case UnaryOp::kSqrt:
      return std::sqrt(x);
    case UnaryOp::kRsqrt:
      return 1.0 / std::sqrt(x);
    case UnaryOp::kSin:
      return std::sin(x);
    case UnaryOp::kCos:
      return std::cos(x);
    case UnaryOp::kTan:
      return std::tan(x);
    case UnaryOp::kSinh:
      return std::sinh(x);
    case UnaryOp::kCosh:
      return std::cosh(x);
    case UnaryOp::kTanh:
      return std::tanh(x);
    case UnaryOp::kErf:
      return std::erf(x);
    case UnaryOp::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::kRelu:
      return x > 0 ? x : (std::isnan(x) ? x : 0.0);
    // x Phi(x) without cancellation for x < 0. NaN gives x's NaN, quieted: which NaN the
    // product returns would depend on how it is compiled (-O0 gave -NaN for +NaN).
    case UnaryOp::kGeluErf:
      return std::isnan(x) ? x + x : 0.5 * x * std::erfc(-x * kSqrt1_2);
    case UnaryOp::kGeluTanh: {  // 0.5 x (1 + tanh u) without cancellation: x m / (1 + m), u < 0
      const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
      const double m = std::exp(-2.0 * std::fabs(u));
      return x * (u < 0 ? m : 1.0) / (1.0 + m);
    }
    case UnaryOp::kSilu:
      return x / (1.0 + std::exp(-x));
    case UnaryOp::kSoftplus:
      return std::fmax(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
    case UnaryOp::kNegative:
      return -x;
    case UnaryOp::kReciprocal:
      return 1.0 / x;
    case UnaryOp::kIsnan:
      return std::isnan(x) ? 1 : 0;
    case UnaryOp::kIsinf:
      return std::isinf(x) ? 1 : 0;
    case UnaryOp::kBitNot:
    case UnaryOp::kLogicalNot:
      return x == 0 ? 1 : 0;
  }
  return x;
}

std::int64_t unary_int(UnaryOp op, std::int64_t x, DataType dtype) {
  const auto u = static_cast<std::uint64_t>(x);
  switch (op) {
    case UnaryOp::kAbs:
      return x < 0 ? static_cast<std::int64_t>(0 - u) : x;
    case UnaryOp::kNegative:
      return static_cast<std::int64_t>(0 - u);
    case UnaryOp::kRelu:
      return x > 0 ? x : 0;
    case UnaryOp::kBitNot:
      return dtype == DataType::kBool ? !x : static_cast<std::int64_t>(~u);
    case UnaryOp::kLogicalNot:
      return x == 0 ? 1 : 0;
    default:
      return x;
  }
}

double python_mod(double a, double b) {
  const double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

double binary_float(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kFloorDiv:
      return std::floor(a / b);
    case BinaryOp::kMod:
      return python_mod(a, b);
    // NaN if either is; a tie (+0 and -0) gives a. Not fmax/fmin: which zero they return is
    // unspecified (an -O0 build got b's).
    case BinaryOp::kMaximum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a >= b ? a : b);
    case BinaryOp::kMinimum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a <= b ? a : b);
    case BinaryOp::kPow:
      return std::pow(a, b);
    case BinaryOp::kEq:
      return a == b;
    case BinaryOp::kNe:
      return a != b;
    case BinaryOp::kLt:
      return a < b;
    case BinaryOp::kLe:
      return a <= b;
    case BinaryOp::kGt:
      return a > b;
    case BinaryOp::kGe:
      return a >= b;
    case BinaryOp::kLogicalAnd:
      return a != 0 && b != 0;
    case BinaryOp::kLogicalOr:
      return a != 0 || b != 0;
    default:
      return NAN;  // bitwise ops on floats are rejected by the verifier
  }
}

std::int64_t binary_int(BinaryOp op, std::int64_t a, std::int64_t b, DataType dtype) {
  const auto ua = static_cast<std::uint64_t>(a);
  const auto ub = static_cast<std::uint64_t>(b);
  const int bits = dtype == DataType::kBool ? 1 : static_cast<int>(8 * size_of(dtype));
  switch (op) {
    case BinaryOp::kAdd:
      return static_cast<std::int64_t>(ua + ub);
    case BinaryOp::kSub:
      return static_cast<std::int64_t>(ua - ub);
    case BinaryOp::kMul:
      return static_cast<std::int64_t>(ua * ub);
    case BinaryOp::kFloorDiv: {
      if (b == 0) return 0;  // defined as 0: no trap inside a kernel
      if (b == -1) return static_cast<std::int64_t>(0 - ua);
      const std::int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case BinaryOp::kMod: {
      if (b == 0 || b == -1) return 0;
      const std::int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case BinaryOp::kMaximum:
      return a > b ? a : b;
    case BinaryOp::kMinimum:
      return a < b ? a : b;
    case BinaryOp::kEq:
      return a == b;
    case BinaryOp::kNe:
      return a != b;
    case BinaryOp::kLt:
      return a < b;
    case BinaryOp::kLe:
      return a <= b;
    case BinaryOp::kGt:
      return a > b;
    case BinaryOp::kGe:
      return a >= b;
    case BinaryOp::kBitAnd:
      return a & b;
    case BinaryOp::kBitOr:
      return a | b;
    case BinaryOp::kBitXor:
      return a ^ b;
    case BinaryOp::kShl:
      return (b < 0 || b >= bits) ? 0 : static_cast<std::int64_t>(ua << b);
    case BinaryOp::kShr:
      return (b < 0 || b >= bits) ? (a < 0 ? -1 : 0) : (a >> b);
    case BinaryOp::kLogicalAnd:
      return a != 0 && b != 0;
    case BinaryOp::kLogicalOr:
      return a != 0 || b != 0;
    default:
      return 0;
  }
}

}  // namespace

std::vector<std::size_t> broadcast_map(const std::vector<std::int64_t>& shape,
                                       const std::vector<std::int64_t>& out_shape) {
  const std::size_t rank = out_shape.size();
  std::vector<std::int64_t> strides(rank, 0);
  const std::vector<std::int64_t> own = row_major_strides(shape);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::size_t d = rank - shape.size() + i;
    strides[d] = shape[i] == 1 ? 0 : own[i];
  }
  std::size_t n = 1;
  for (std::int64_t e : out_shape) n *= static_cast<std::size_t>(e);
  std::vector<std::size_t> map(n);
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t src = 0;
  for (std::size_t k = 0; k < n; ++k) {
    map[k] = static_cast<std::size_t>(src);
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      src += strides[d];
      if (++index[d] < out_shape[d]) break;
      src -= strides[d] * index[d];
      index[d] = 0;
    }
  }
  return map;
}

void eval_unary(UnaryOp op, const Buffer& x, Buffer& out) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (x.floating()) {
      out.set(k, unary_float(op, x.f[k]));
    } else {
      out.set_int(k, unary_int(op, x.i[k], x.dtype));
    }
  }
}

void eval_binary(BinaryOp op, const Buffer& a, const Buffer& b, Buffer& out) {
  const auto ma = broadcast_map(a.shape, out.shape);
  const auto mb = broadcast_map(b.shape, out.shape);
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (a.floating()) {
      out.set(k, binary_float(op, a.f[ma[k]], b.f[mb[k]]));
    } else {
      out.set_int(k, binary_int(op, a.i[ma[k]], b.i[mb[k]], a.dtype));
    }
  }
}

void eval_where(const Buffer& cond, const Buffer& a, const Buffer& b, Buffer& out) {
  const auto mc = broadcast_map(cond.shape, out.shape);
  const auto ma = broadcast_map(a.shape, out.shape);
  const auto mb = broadcast_map(b.shape, out.shape);
  for (std::size_t k = 0; k < out.size(); ++k) {
    const bool c = cond.i[mc[k]] != 0;
    if (out.floating()) {
      out.f[k] = c ? a.f[ma[k]] : b.f[mb[k]];
    } else {
      out.i[k] = c ? a.i[ma[k]] : b.i[mb[k]];
    }
  }
}

}  // namespace tileops::tl::interp
