// Casts (`.to(dtype, round_mode)`) on the interp backend: every rounding mode to integers and to
// narrower floats, with ties, saturation and NaN; int to float and to bool.
#include "tests/tl/tl_test_util.h"
#include "tileops/core/float16.h"

namespace tileops::testing::tl_test {
namespace {

tl::Kernel cast_kernel() {
  return tl::jit("cast", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n,
                            tl::ConstExpr<int> mode) {
    const tl::Value tx = tl::tensor(x, {n});
    const tl::Value to = tl::tensor(out, {n});
    for (tl::Value i : tl::range(tl::block_idx() * 8, n, tl::block_num() * 8)) {
      tl::store(tl::load(tx, {8}, {i}).to(to.dtype(), static_cast<tl::RoundMode>(*mode)), to, {i});
    }
  });
}

const tl::RoundMode kModes[] = {tl::RoundMode::kRint, tl::RoundMode::kFloor, tl::RoundMode::kCeil,
                                tl::RoundMode::kTrunc, tl::RoundMode::kHalfAway};

double round_ref(double v, tl::RoundMode m) {
  switch (m) {
    case tl::RoundMode::kRint: {
      const double f = std::floor(v);
      const double d = v - f;
      return d > 0.5 ? f + 1 : (d < 0.5 ? f : (std::fmod(f, 2) == 0 ? f : f + 1));
    }
    case tl::RoundMode::kFloor:
      return std::floor(v);
    case tl::RoundMode::kCeil:
      return std::ceil(v);
    case tl::RoundMode::kTrunc:
      return std::trunc(v);
    case tl::RoundMode::kHalfAway:
      return v < 0 ? -std::floor(-v + 0.5) : std::floor(v + 0.5);
  }
  return v;
}

// covers: to round_modes
TEST(TlCast, FloatToIntEveryRoundMode) {
  const tl::Kernel k = cast_kernel();
  std::vector<double> values;
  for (int i = -20; i <= 20; ++i) values.push_back(i * 0.25);  // ties at +-0.5, 1.5, ...
  values.push_back(3e9);                                       // saturates to int32 max
  values.push_back(-3e9);                                      // and min
  const auto n = static_cast<std::int64_t>(values.size());
  TensorStorage x({n}, DataType::kFloat32);
  from_doubles(x, values);
  for (tl::RoundMode m : kModes) {
    for (int cores : core_nums()) {
      TensorStorage out = poisoned({n}, DataType::kInt32);
      k.launch(cores, x, out, n, static_cast<int>(m));
      std::vector<double> expected;
      for (double v : values)
        expected.push_back(std::clamp(round_ref(v, m), -2147483648.0, 2147483647.0));
      EXPECT_EQ(compare(out, expected, {0, 0}), "") << tl::name_of(m) << " cores " << cores;
    }
  }
}

// covers: to round_modes
TEST(TlCast, Float32ToFloat16EveryRoundMode) {
  // Inputs a quarter, a half and three quarters of the way between neighbouring float16 values.
  std::vector<double> values, lo, hi;
  for (std::uint16_t bits : {0x3c00, 0x3c01, 0x4a3f, 0x0001, 0x1234, 0x7bfe}) {
    for (double frac : {0.25, 0.5, 0.75}) {
      for (double sign : {1.0, -1.0}) {
        const double a = float16_to_float(bits), b = float16_to_float(bits + 1);
        values.push_back(sign * (a + (b - a) * frac));
        lo.push_back(sign > 0 ? a : -b);
        hi.push_back(sign > 0 ? b : -a);
      }
    }
  }
  const auto n = static_cast<std::int64_t>(values.size());
  TensorStorage x({n}, DataType::kFloat32);
  from_doubles(x, values);
  ASSERT_EQ(to_doubles(x), values);  // exact in float32
  const tl::Kernel k = cast_kernel();
  for (tl::RoundMode m : kModes) {
    TensorStorage out = poisoned({n}, DataType::kFloat16);
    k.launch(3, x, out, n, static_cast<int>(m));
    std::vector<double> expected;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double v = values[i], l = lo[i], h = hi[i];
      const double dl = v - l, dh = h - v;
      double e = 0;
      switch (m) {
        case tl::RoundMode::kFloor:
          e = l;
          break;
        case tl::RoundMode::kCeil:
          e = h;
          break;
        case tl::RoundMode::kTrunc:
          e = v > 0 ? l : h;
          break;
        case tl::RoundMode::kHalfAway:
          e = dl < dh ? l : (dh < dl ? h : (v > 0 ? h : l));
          break;
        case tl::RoundMode::kRint: {
          std::uint16_t lb = float_to_float16(static_cast<float>(l));
          e = dl < dh ? l : (dh < dl ? h : ((lb & 1) == 0 ? l : h));
          break;
        }
      }
      expected.push_back(e);
    }
    EXPECT_EQ(compare(out, expected, {0, 0}), "") << tl::name_of(m);
  }
}

TEST(TlCast, IntToFloatAndBool) {
  const tl::Kernel k = cast_kernel();
  TensorStorage x({11}, DataType::kInt32);
  from_doubles(x, {0, 1, -1, 2049, 16777217, -5, 7, 0, 3, 100000, -2});
  const auto xs = to_doubles(x);
  TensorStorage f({11}, DataType::kFloat16), b({11}, DataType::kBool);
  k.launch(2, x, f, 11, 0);
  k.launch(2, x, b, 11, 0);
  std::vector<double> ef, eb;
  for (double v : xs) {
    ef.push_back(static_cast<double>(float16_to_float(float_to_float16(static_cast<float>(v)))));
    eb.push_back(v != 0 ? 1 : 0);
  }
  EXPECT_EQ(compare(f, ef, {0, 0}), "");
  EXPECT_EQ(compare(b, eb, {0, 0}), "");
}

}  // namespace
}  // namespace tileops::testing::tl_test
