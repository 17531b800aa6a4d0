// The test suite shared by add and mul: tests/ops/{add,mul}_test.cc instantiate it with their
// operator. Float64 references with NumPy broadcasting, every dtype, tail sizes, strided
// layouts, integer wrap-around, in-place calls, the class form, thread splits and bad inputs.
//
// Every test runs once per active CPU implementation of the operator (native, tl).
//
// An Op type provides:
//   static constexpr const char* kName = "add";         // the registered operator
//   using Class = Add;                                  // the class form
//   static void call(input, other, out, ctx);           // the free function
//   static double reference(double a, double b);        // float64 reference
//   template <typename U> static U wrap(U a, U b);      // U unsigned: two's-complement result
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/runtime/context.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::arithmetic_test {

using testing::Layout;

// Float64 expectation of f over out's shape with NumPy broadcasting (tests/support).
inline std::vector<double> broadcast_reference(const Tensor& a, const Tensor& b, const Dims& out,
                                               double (*f)(double, double)) {
  return testing::reference::broadcast_binary(testing::to_doubles(a), a.shape(),
                                              testing::to_doubles(b), b.shape(), out, f);
}

inline bool is_int(DataType dtype) {
  return dtype == DataType::kInt32 || dtype == DataType::kInt64;
}

// Integers in [-1000, 1000): products stay exact in float64; floats in [-2, 2).
inline TensorStorage operand(const Dims& shape, DataType dtype, std::mt19937_64& rng,
                             Layout layout) {
  return is_int(dtype) ? testing::random_tensor(shape, dtype, rng, layout, -1000.0, 1000.0)
                       : testing::random_tensor(shape, dtype, rng, layout);
}

template <typename Op>
void check_case(const Dims& a_shape, const Dims& b_shape, const Dims& out_shape, DataType dtype,
                Layout layout, const Context& ctx = {}) {
  SCOPED_TRACE(std::string(name_of(dtype)) + " " + testing::layout_name(layout) + " " +
               a_shape.to_string() + " with " + b_shape.to_string());
  std::mt19937_64 rng(a_shape.product() * 131 + b_shape.product());
  auto a = operand(a_shape, dtype, rng, layout);
  auto b = operand(b_shape, dtype, rng, layout);
  auto out = testing::poisoned(out_shape, dtype, layout);
  Op::call(a, b, out, ctx);
  const auto expected = broadcast_reference(a.view(), b.view(), out_shape, Op::reference);
  EXPECT_EQ(testing::compare(out.view(), expected, testing::tolerance_for(dtype)), "");
}

inline const DataType kAllDtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                      DataType::kInt32, DataType::kInt64};
inline const Layout kLayouts[] = {Layout::kContiguous, Layout::kStrided};

template <typename Op>
class ArithmeticTest : public ::testing::Test {};
TYPED_TEST_SUITE_P(ArithmeticTest);

TYPED_TEST_P(ArithmeticTest, SameShapeEveryDtypeTailAndLayout) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    for (DataType dtype : kAllDtypes) {
      for (std::int64_t width : {1, 7, 33, 4097}) {
        for (Layout layout : kLayouts) {
          check_case<TypeParam>({3, 5, width}, {3, 5, width}, {3, 5, width}, dtype, layout, ctx);
        }
      }
    }
  });
}

TYPED_TEST_P(ArithmeticTest, Broadcasting) {
  struct Case {
    Dims a, b, out;
  };
  const Case cases[] = {
      {{5, 33}, {1}, {5, 33}},               // scalar-like
      {{1}, {4097}, {4097}},                 // scalar-like input
      {{7, 4097}, {4097}, {7, 4097}},        // row vector
      {{33}, {3, 33}, {3, 33}},              // row vector as input
      {{9, 33}, {9, 1}, {9, 33}},            // column
      {{9, 1}, {9, 7}, {9, 7}},              // column as input
      {{4, 1, 33}, {4, 6, 33}, {4, 6, 33}},  // rank 3, middle dim broadcast
      {{2, 3, 7}, {3, 1}, {2, 3, 7}},        // different ranks
      {{5, 1}, {1, 7}, {5, 7}},              // both broadcast: an outer product
      {{2, 1, 4, 1}, {3, 1, 5}, {2, 3, 4, 5}},
      {{}, {3, 4}, {3, 4}},  // rank 0
      {{}, {}, {}},
      {{40000}, {1}, {40000}},  // one long row over several blocks
      {{0, 5}, {5}, {0, 5}},    // empty
  };
  testing::for_each_implementation(TypeParam::kName, [&](const Context& ctx) {
    for (const Case& c : cases) {
      for (DataType dtype : kAllDtypes) {
        for (Layout layout : kLayouts) check_case<TypeParam>(c.a, c.b, c.out, dtype, layout, ctx);
      }
    }
  });
}

// One long row, few rows, many short rows: every split across (and within) rows of a pool with
// more threads than rows.
TYPED_TEST_P(ArithmeticTest, SplitsWorkAcrossThreads) {
  ThreadPool pool(4);
  Context base;
  base.thread_pool = &pool;
  testing::for_each_implementation(
      TypeParam::kName,
      [](const Context& ctx) {
        for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
          check_case<TypeParam>({100003}, {100003}, {100003}, dtype, Layout::kContiguous, ctx);
          check_case<TypeParam>({1, 100003}, {1, 100003}, {1, 100003}, dtype, Layout::kStrided,
                                ctx);
          check_case<TypeParam>({3, 50001}, {50001}, {3, 50001}, dtype, Layout::kContiguous, ctx);
          check_case<TypeParam>({20000, 3}, {20000, 1}, {20000, 3}, dtype, Layout::kStrided, ctx);
        }
      },
      base);
}

// Integers wrap modulo 2^n, both contiguous and broadcast (other = one value).
template <typename Op, typename T>
void check_wrap(const Context& ctx) {
  using U = std::make_unsigned_t<T>;
  const DataType dtype = sizeof(T) == 4 ? DataType::kInt32 : DataType::kInt64;
  const T max = std::numeric_limits<T>::max();
  const T min = std::numeric_limits<T>::min();
  const T half = static_cast<T>(T{1} << (4 * sizeof(T)));  // 2^16 or 2^32: half² wraps to 0
  const std::vector<T> a_values = {max, min, half, static_cast<T>(half + 1), -1, max, min, 3, 0};
  const std::vector<T> b_values = {1, -1, half, static_cast<T>(half - 1), min, max, min, -7, max};
  const std::int64_t n = static_cast<std::int64_t>(a_values.size());
  TensorStorage a({n}, dtype);
  TensorStorage b({n}, dtype);
  TensorStorage out({n}, dtype);
  TensorStorage out_scalar({n}, dtype);
  TensorStorage scalar({1}, dtype);
  for (std::int64_t i = 0; i < n; ++i) {
    a.view().data_as<T>()[i] = a_values[static_cast<std::size_t>(i)];
    b.view().data_as<T>()[i] = b_values[static_cast<std::size_t>(i)];
  }
  scalar.view().data_as<T>()[0] = max;
  Op::call(a, b, out, ctx);
  Op::call(a, scalar, out_scalar, ctx);
  for (std::int64_t i = 0; i < n; ++i) {
    const U x = static_cast<U>(a_values[static_cast<std::size_t>(i)]);
    const U y = static_cast<U>(b_values[static_cast<std::size_t>(i)]);
    EXPECT_EQ(out.view().data_as<T>()[i], static_cast<T>(Op::wrap(x, y))) << "element " << i;
    EXPECT_EQ(out_scalar.view().data_as<T>()[i], static_cast<T>(Op::wrap(x, static_cast<U>(max))))
        << "element " << i << " with a broadcast other";
  }
}

TYPED_TEST_P(ArithmeticTest, IntegersWrapAround) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    check_wrap<TypeParam, std::int32_t>(ctx);
    check_wrap<TypeParam, std::int64_t>(ctx);
  });
}

// out is input (other broadcast), out is other, out is both; fresh operands for each, so that
// integer products stay exact in the float64 reference.
TYPED_TEST_P(ArithmeticTest, InPlace) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32}) {
      for (Layout layout : kLayouts) {
        SCOPED_TRACE(std::string(name_of(dtype)) + " " + testing::layout_name(layout));
        std::mt19937_64 rng(11);
        const Dims shape{6, 130};
        auto x = operand(shape, dtype, rng, layout);
        auto row = operand({130}, dtype, rng, layout);
        const auto expected_x =
            broadcast_reference(x.view(), row.view(), shape, TypeParam::reference);
        TypeParam::call(x, row, x, ctx);
        EXPECT_EQ(testing::compare(x.view(), expected_x, testing::tolerance_for(dtype)), "");

        auto a = operand(shape, dtype, rng, layout);
        auto y = operand(shape, dtype, rng, layout);
        const auto expected_y =
            broadcast_reference(a.view(), y.view(), shape, TypeParam::reference);
        TypeParam::call(a, y, y, ctx);
        EXPECT_EQ(testing::compare(y.view(), expected_y, testing::tolerance_for(dtype)), "");

        auto z = operand(shape, dtype, rng, layout);
        const auto expected_z =
            broadcast_reference(z.view(), z.view(), shape, TypeParam::reference);
        TypeParam::call(z, z, z, ctx);
        EXPECT_EQ(testing::compare(z.view(), expected_z, testing::tolerance_for(dtype)), "");
      }
    }
  });
}

TYPED_TEST_P(ArithmeticTest, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    std::mt19937_64 rng(3);
    const DataType dtype = DataType::kFloat32;
    auto a = operand({4, 100}, dtype, rng, Layout::kStrided);
    auto b = operand({100}, dtype, rng, Layout::kContiguous);
    auto out = testing::poisoned({4, 100}, dtype, Layout::kStrided);
    const typename TypeParam::Class op(a, b, out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = operand({4, 100}, dtype, rng, Layout::kStrided);
      auto y = operand({100}, dtype, rng, Layout::kContiguous);
      auto z = testing::poisoned({4, 100}, dtype, Layout::kStrided);
      op(x, y, z);
      const auto expected = broadcast_reference(x.view(), y.view(), {4, 100}, TypeParam::reference);
      EXPECT_EQ(testing::compare(z.view(), expected, testing::tolerance_for(dtype)), "");
    }
    auto other_geometry = testing::poisoned({4, 100}, dtype);  // contiguous, not strided
    testing::expect_rejected([&] { op(other_geometry, b, other_geometry); }, other_geometry,
                             "input");
  });
}

TYPED_TEST_P(ArithmeticTest, RejectsBadInputs) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    std::mt19937_64 rng(1);
    const DataType f32 = DataType::kFloat32;
    auto input = operand({4, 6}, f32, rng, Layout::kContiguous);
    auto row = operand({6}, f32, rng, Layout::kContiguous);
    auto column = operand({4, 1}, f32, rng, Layout::kContiguous);
    auto wide = operand({4, 5}, f32, rng, Layout::kContiguous);
    auto int_row = operand({6}, DataType::kInt32, rng, Layout::kContiguous);
    auto f64_input = operand({4, 6}, DataType::kFloat64, rng, Layout::kContiguous);
    auto u8_input = operand({4, 6}, DataType::kUInt8, rng, Layout::kContiguous);
    auto out = testing::poisoned({4, 6}, f32);
    auto half_out = testing::poisoned({4, 6}, DataType::kFloat16);
    auto narrow_out = testing::poisoned({4, 5}, f32);
    auto rank3_out = testing::poisoned({1, 4, 6}, f32);
    auto column_out = testing::poisoned({4, 1}, f32);
    const auto kType = ErrorKind::kInvalidType;
    const auto kArg = ErrorKind::kInvalidArgument;
    using testing::expect_rejected;
    expect_rejected([&] { TypeParam::call(input, int_row, out, ctx); }, out, "other", kType);
    expect_rejected([&] { TypeParam::call(f64_input, f64_input, out, ctx); }, out, "input", kType);
    expect_rejected([&] { TypeParam::call(u8_input, u8_input, out, ctx); }, out, "input", kType);
    expect_rejected([&] { TypeParam::call(input, row, half_out, ctx); }, half_out, "out", kType);
    expect_rejected([&] { TypeParam::call(input, wide, out, ctx); }, out, "other", kArg);
    expect_rejected([&] { TypeParam::call(input, row, narrow_out, ctx); }, narrow_out, "out", kArg);
    expect_rejected([&] { TypeParam::call(input, row, rank3_out, ctx); }, rank3_out, "out", kArg);
    // out may not be smaller than the broadcast shape...
    expect_rejected([&] { TypeParam::call(column, row, column_out, ctx); }, column_out, "out",
                    kArg);
    // ...nor broadcast itself.
    const Tensor broadcast_out = out.view().with_shape({4, 6}, {0, 1});
    expect_rejected([&] { TypeParam::call(input, row, broadcast_out, ctx); }, out, "out", kArg);
  });
}

// NaN (either sign) and ±inf operands give what float64 gives (inf - inf, 0·inf: NaN), same
// shape and broadcast, every float dtype, vector bodies and tails.
TYPED_TEST_P(ArithmeticTest, NonFiniteOperands) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (const auto& [a_shape, b_shape] :
           {std::pair<Dims, Dims>{{3, 37}, {3, 37}}, {{5, 33}, {33}}, {{5, 1}, {1, 7}}}) {
        SCOPED_TRACE(std::string(name_of(dtype)) + " " + a_shape.to_string() + " with " +
                     b_shape.to_string());
        std::mt19937_64 rng(a_shape.product());
        auto a = testing::random_nonfinite_tensor(a_shape, dtype, rng, Layout::kStrided, 4);
        auto b = testing::random_nonfinite_tensor(b_shape, dtype, rng, Layout::kContiguous, 4);
        const Dims out_shape = a_shape.size() == b_shape.size() && a_shape[1] == 1
                                   ? Dims{a_shape[0], b_shape[1]}
                                   : a_shape;
        auto out = testing::poisoned(out_shape, dtype);
        TypeParam::call(a, b, out, ctx);
        const auto expected =
            broadcast_reference(a.view(), b.view(), out_shape, TypeParam::reference);
        EXPECT_EQ(testing::compare(out.view(), expected, testing::tolerance_for(dtype)), "");
      }
    }
  });
}

REGISTER_TYPED_TEST_SUITE_P(ArithmeticTest, SameShapeEveryDtypeTailAndLayout, Broadcasting,
                            SplitsWorkAcrossThreads, IntegersWrapAround, InPlace,
                            CachedInstanceIsCorrectOnNewData, RejectsBadInputs, NonFiniteOperands);

}  // namespace tileops::ops::arithmetic_test
