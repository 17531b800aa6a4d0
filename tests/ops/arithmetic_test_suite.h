// The test suite shared by add and mul: tests/ops/{add,mul}_test.cc instantiate it with their
// operator. Float64 references with NumPy broadcasting (integers: exact, computed in 64 bits and
// wrapped to their width), every dtype, tail sizes, strided layouts, integer wrap-around, in-place
// calls, the class form, thread splits and bad inputs.
//
// Every test runs once per active CPU implementation of the operator (native, tl).
//
// An Op type provides:
//   static constexpr const char* kName = "add";         // the registered operator
//   using Class = Add;                                  // the class form
//   static void call(input, other, out, ctx);           // the free function
//   static double reference(double a, double b);        // float64 reference
//   template <typename U> static U wrap(U a, U b);      // U unsigned: the result modulo 2^n
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
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

inline bool is_int(DataType dtype) { return is_integral(dtype); }

// x modulo 2^n as an element of the integer dtype (two's complement), sign-extended.
inline std::int64_t wrap_to(DataType dtype, std::uint64_t x) {
  switch (dtype) {
    case DataType::kInt8:
      return static_cast<std::int8_t>(x);
    case DataType::kUInt8:
      return static_cast<std::uint8_t>(x);
    case DataType::kInt16:
      return static_cast<std::int16_t>(x);
    case DataType::kInt32:
      return static_cast<std::int32_t>(x);
    default:
      return static_cast<std::int64_t>(x);
  }
}

// The elements of an integer tensor in row-major order, exactly (doubles lose int64 bits).
inline std::vector<std::int64_t> to_integers(const Tensor& t) {
  std::vector<std::int64_t> values;
  for (std::uint64_t bits : testing::element_bits(t)) values.push_back(wrap_to(t.dtype(), bits));
  return values;
}

// Row-major position in a tensor of `shape` of the element that out's element `flat` reads
// under NumPy broadcasting.
inline std::int64_t broadcast_source(const Dims& shape, const Dims& out, std::int64_t flat) {
  std::int64_t index = 0;
  std::int64_t scale = 1;
  const int shift = out.size() - shape.size();
  for (int d = out.size() - 1; d >= 0; --d) {
    const std::int64_t i = flat % out[d];
    flat /= out[d];
    if (d < shift) continue;
    const std::int64_t extent = shape[d - shift];
    if (extent != 1) index += i * scale;
    scale *= extent;
  }
  return index;
}

// The exact expectation of an integer operator: Op::wrap in 64 bits, then modulo 2^n.
template <typename Op>
std::vector<std::int64_t> integer_reference(const Tensor& a, const Tensor& b, const Dims& out) {
  const std::vector<std::int64_t> x = to_integers(a);
  const std::vector<std::int64_t> y = to_integers(b);
  std::vector<std::int64_t> expected(static_cast<std::size_t>(out.product()));
  for (std::int64_t i = 0; i < out.product(); ++i) {
    const auto u = static_cast<std::uint64_t>(x[broadcast_source(a.shape(), out, i)]);
    const auto v = static_cast<std::uint64_t>(y[broadcast_source(b.shape(), out, i)]);
    expected[static_cast<std::size_t>(i)] = wrap_to(a.dtype(), Op::wrap(u, v));
  }
  return expected;
}

// What out must hold after Op(a, b): float64 within the dtype's tolerance, or exact integers.
struct Expected {
  std::vector<double> floats;
  std::vector<std::int64_t> integers;
};

template <typename Op>
Expected expected_of(const Tensor& a, const Tensor& b, const Dims& out) {
  if (is_int(a.dtype())) return {{}, integer_reference<Op>(a, b, out)};
  return {broadcast_reference(a, b, out, Op::reference), {}};
}

// "" when out holds `expected`, else the first mismatch.
inline std::string mismatch(const Tensor& out, const Expected& expected) {
  if (!is_int(out.dtype())) {
    return testing::compare(out, expected.floats, testing::tolerance_for(out.dtype()));
  }
  const std::vector<std::int64_t> got = to_integers(out);
  if (got.size() != expected.integers.size()) return "size mismatch";
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected.integers[i]) {
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", expected " +
             std::to_string(expected.integers[i]);
    }
  }
  return "";
}

// Integers over their dtype's whole range (the products wrap); floats in [-2, 2).
inline TensorStorage operand(const Dims& shape, DataType dtype, std::mt19937_64& rng,
                             Layout layout) {
  if (!is_int(dtype)) return testing::random_tensor(shape, dtype, rng, layout);
  TensorStorage t = testing::poisoned(shape, dtype, layout);
  const Tensor v = t.view();
  std::vector<std::int64_t> index(static_cast<std::size_t>(v.rank()), 0);
  for (std::int64_t i = 0; i < v.numel(); ++i) {
    const std::uint64_t bits = rng();
    std::memcpy(v.element_ptr(index.data()), &bits, v.element_size());  // little-endian
    for (int d = v.rank() - 1; d >= 0; --d) {
      if (++index[d] < v.size(d)) break;
      index[d] = 0;
    }
  }
  return t;
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
  EXPECT_EQ(mismatch(out.view(), expected_of<Op>(a.view(), b.view(), out_shape)), "");
}

inline const DataType kAllDtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                      DataType::kInt8,    DataType::kInt16,   DataType::kInt32,
                                      DataType::kInt64,   DataType::kUInt8};
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

template <typename T>
constexpr DataType dtype_for() {
  if constexpr (std::is_same_v<T, std::int8_t>) return DataType::kInt8;
  if constexpr (std::is_same_v<T, std::uint8_t>) return DataType::kUInt8;
  if constexpr (std::is_same_v<T, std::int16_t>) return DataType::kInt16;
  if constexpr (std::is_same_v<T, std::int32_t>) return DataType::kInt32;
  return DataType::kInt64;
}

// Integers wrap modulo 2^n, both contiguous and broadcast (other = one value).
template <typename Op, typename T>
void check_wrap(const Context& ctx) {
  using U = std::make_unsigned_t<T>;
  const DataType dtype = dtype_for<T>();
  SCOPED_TRACE(std::string(name_of(dtype)));
  const T max = std::numeric_limits<T>::max();
  const T min = std::numeric_limits<T>::min();
  const auto t = [](long long v) { return static_cast<T>(v); };  // -1 wraps for uint8
  const T half = t(1LL << (4 * sizeof(T)));  // 2^4, 2^8, 2^16 or 2^32: half² wraps to 0
  const std::vector<T> a_values = {max, min, half, t(half + 1), t(-1), max, min, 3, 0};
  const std::vector<T> b_values = {1, t(-1), half, t(half - 1), min, max, min, t(-7), max};
  const std::int64_t n = static_cast<std::int64_t>(a_values.size());
  TensorStorage a({n}, dtype);
  TensorStorage b({n}, dtype);
  TensorStorage out({n}, dtype);
  TensorStorage out_scalar({n}, dtype);
  TensorStorage scalar({1}, dtype);
  out.fill_bytes(0xA5);
  out_scalar.fill_bytes(0xA5);
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
    // +0: int8/uint8 print as numbers, not characters.
    EXPECT_EQ(out.view().data_as<T>()[i] + 0, static_cast<T>(Op::wrap(x, y)) + 0)
        << "element " << i;
    EXPECT_EQ(out_scalar.view().data_as<T>()[i] + 0,
              static_cast<T>(Op::wrap(x, static_cast<U>(max))) + 0)
        << "element " << i << " with a broadcast other";
  }
}

TYPED_TEST_P(ArithmeticTest, IntegersWrapAround) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    check_wrap<TypeParam, std::int8_t>(ctx);
    check_wrap<TypeParam, std::uint8_t>(ctx);
    check_wrap<TypeParam, std::int16_t>(ctx);
    check_wrap<TypeParam, std::int32_t>(ctx);
    check_wrap<TypeParam, std::int64_t>(ctx);
  });
}

// out is input (other broadcast), out is other, out is both; fresh operands for each.
TYPED_TEST_P(ArithmeticTest, InPlace) {
  testing::for_each_implementation(TypeParam::kName, [](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt8,
                           DataType::kInt16, DataType::kInt32, DataType::kUInt8}) {
      for (Layout layout : kLayouts) {
        SCOPED_TRACE(std::string(name_of(dtype)) + " " + testing::layout_name(layout));
        std::mt19937_64 rng(11);
        const Dims shape{6, 130};
        auto x = operand(shape, dtype, rng, layout);
        auto row = operand({130}, dtype, rng, layout);
        const Expected expected_x = expected_of<TypeParam>(x.view(), row.view(), shape);
        TypeParam::call(x, row, x, ctx);
        EXPECT_EQ(mismatch(x.view(), expected_x), "");

        auto a = operand(shape, dtype, rng, layout);
        auto y = operand(shape, dtype, rng, layout);
        const Expected expected_y = expected_of<TypeParam>(a.view(), y.view(), shape);
        TypeParam::call(a, y, y, ctx);
        EXPECT_EQ(mismatch(y.view(), expected_y), "");

        auto z = operand(shape, dtype, rng, layout);
        const Expected expected_z = expected_of<TypeParam>(z.view(), z.view(), shape);
        TypeParam::call(z, z, z, ctx);
        EXPECT_EQ(mismatch(z.view(), expected_z), "");
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
    auto bool_input = testing::poisoned({4, 6}, DataType::kBool);
    auto i16_row = operand({6}, DataType::kInt16, rng, Layout::kContiguous);
    auto i8_input = operand({4, 6}, DataType::kInt8, rng, Layout::kContiguous);
    auto u8_out = testing::poisoned({4, 6}, DataType::kUInt8);
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
    expect_rejected([&] { TypeParam::call(bool_input, bool_input, out, ctx); }, out, "input",
                    kType);
    // Integers of other widths or signedness do not mix either (no implicit promotion).
    expect_rejected([&] { TypeParam::call(i8_input, i16_row, u8_out, ctx); }, u8_out, "other",
                    kType);
    expect_rejected([&] { TypeParam::call(i8_input, i8_input, u8_out, ctx); }, u8_out, "out",
                    kType);
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
