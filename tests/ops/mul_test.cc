// mul against float64/exact-integer references: the shared broadcasting arithmetic suite
// (arithmetic_test_suite.h) instantiated with mul.
#include "tileops/ops/mul.h"

#include "tests/ops/arithmetic_test_suite.h"

namespace tileops::ops::arithmetic_test {
namespace {

struct MulOp {
  static constexpr const char* kName = "mul";
  using Class = Mul;
  static void call(const Tensor& a, const Tensor& b, const Tensor& out, const Context& ctx) {
    mul(a, b, out, ctx);
  }
  static double reference(double a, double b) { return a * b; }
  template <typename U>
  static U wrap(U a, U b) {
    return static_cast<U>(std::uint64_t{a} * std::uint64_t{b});  // no int promotion
  }
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Mul, ArithmeticTest, ::testing::Types<MulOp>);

}  // namespace tileops::ops::arithmetic_test
