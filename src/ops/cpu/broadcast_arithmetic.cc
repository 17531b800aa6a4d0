#include "src/ops/cpu/broadcast_arithmetic.h"

#include <type_traits>

#include "src/ops/contracts/add.decl.h"
#include "src/ops/contracts/mul.decl.h"
#include "src/ops/cpu/elementwise_float.h"
#include "src/ops/cpu/elementwise_loop.h"
#include "src/ops/cpu/simd/elementwise_kernels.h"
#include "src/ops/framework/broadcast.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from add's declaration; mul declares the same arguments.
constexpr int kInput = tensor_index(decls::add, "input");
constexpr int kOther = tensor_index(decls::add, "other");
constexpr int kOut = tensor_index(decls::add, "out");
static_assert(kInput == tensor_index(decls::mul, "input") &&
              kOther == tensor_index(decls::mul, "other") &&
              kOut == tensor_index(decls::mul, "out"));

ElementwiseLoop make_loop(const Problem& problem) {
  const TensorDesc& out = problem.tensors[kOut];
  std::array<Dims, ElementwiseLoop::kOperands> strides;
  const int operands[ElementwiseLoop::kOperands] = {kInput, kOther, kOut};  // the loop's order
  for (int i = 0; i < ElementwiseLoop::kOperands; ++i) {
    const TensorDesc& t = problem.tensors[operands[i]];
    strides[i] = broadcast_strides(t.shape, t.strides, out.shape);
  }
  return ElementwiseLoop(out.shape, strides);
}

// Integers wrap: U is the unsigned type of the element, whose arithmetic is defined modulo 2^n.
template <typename U, typename Op>
void run_wrapping(const ElementwiseLoop& loop, const Tensor* tensors, Op op, ThreadPool& pool) {
  const U* a = static_cast<const U*>(tensors[kInput].data());
  const U* b = static_cast<const U*>(tensors[kOther].data());
  U* out = static_cast<U*>(tensors[kOut].data());
  const std::int64_t sa = loop.inner_stride(0);
  const std::int64_t sb = loop.inner_stride(1);
  const std::int64_t so = loop.inner_stride(2);
  loop.run(pool, [&](int, const std::int64_t* offsets, std::int64_t n) {
    const U* x = a + offsets[0];
    const U* y = b + offsets[1];
    U* z = out + offsets[2];
    if (sa == 1 && sb == 1 && so == 1) {
      for (std::int64_t i = 0; i < n; ++i) z[i] = op(x[i], y[i]);
    } else if (sa == 1 && sb == 0 && so == 1) {
      const U v = y[0];
      for (std::int64_t i = 0; i < n; ++i) z[i] = op(x[i], v);
    } else if (sa == 0 && sb == 1 && so == 1) {
      const U v = x[0];
      for (std::int64_t i = 0; i < n; ++i) z[i] = op(v, y[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) z[i * so] = op(x[i * sa], y[i * sb]);
    }
  });
}

class BroadcastArithmeticCpu final : public Operator {
 public:
  BroadcastArithmeticCpu(const Problem& problem, Arithmetic op)
      : loop_(make_loop(problem)), dtype_(problem.tensors[kOut].dtype), op_(op) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    switch (dtype_) {
      case DataType::kInt8:
      case DataType::kUInt8:
        return run_integer<std::uint8_t>(tensors.data(), ctx.threads());
      case DataType::kInt16:
        return run_integer<std::uint16_t>(tensors.data(), ctx.threads());
      case DataType::kInt32:
        return run_integer<std::uint32_t>(tensors.data(), ctx.threads());
      case DataType::kInt64:
        return run_integer<std::uint64_t>(tensors.data(), ctx.threads());
      case DataType::kFloat32:
      case DataType::kFloat16:
      case DataType::kBFloat16:
        return run_float_elementwise(
            loop_, op_ == Arithmetic::kAdd ? ElementwiseOp::kAdd : ElementwiseOp::kMul, dtype_,
            tensors[kInput].data(), tensors[kOther].data(), tensors[kOut], ctx);
      default:
        throw_internal_error("cpu add/mul", "dtype not validated by the contract");
    }
  }

 private:
  template <typename U>
  void run_integer(const Tensor* tensors, ThreadPool& pool) const {
    if (op_ == Arithmetic::kAdd) return run_wrapping<U>(loop_, tensors, Plus{}, pool);
    run_wrapping<U>(loop_, tensors, Times{}, pool);
  }

  // In unsigned int at least: 8- and 16-bit operands would promote to int, whose overflow
  // (0xffff * 0xffff) is undefined.
  template <typename U>
  using Wide = std::common_type_t<U, unsigned>;
  struct Plus {
    template <typename U>
    U operator()(U x, U y) const {
      return static_cast<U>(Wide<U>{x} + Wide<U>{y});
    }
  };
  struct Times {
    template <typename U>
    U operator()(U x, U y) const {
      return static_cast<U>(Wide<U>{x} * Wide<U>{y});
    }
  };

  ElementwiseLoop loop_;
  DataType dtype_;
  Arithmetic op_;
};

}  // namespace

std::unique_ptr<Operator> make_broadcast_arithmetic(const Problem& problem, Arithmetic op) {
  return std::make_unique<BroadcastArithmeticCpu>(problem, op);
}

}  // namespace tileops::ops::cpu
