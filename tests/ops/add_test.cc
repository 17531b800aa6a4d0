// add against float64/exact-integer references: the shared broadcasting arithmetic suite
// (arithmetic_test_suite.h) instantiated with add.
#include "tileops/ops/add.h"

#include "tests/ops/arithmetic_test_suite.h"

namespace tileops::ops::arithmetic_test {
namespace {

struct AddOp {
  static constexpr const char* kName = "add";
  using Class = Add;
  static void call(const Tensor& a, const Tensor& b, const Tensor& out, const Context& ctx) {
    add(a, b, out, ctx);
  }
  static double reference(double a, double b) { return a + b; }
  template <typename U>
  static U wrap(U a, U b) {
    return static_cast<U>(std::uint64_t{a} + std::uint64_t{b});  // no int promotion
  }
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Add, ArithmeticTest, ::testing::Types<AddOp>);

}  // namespace tileops::ops::arithmetic_test
