// Casts (`.to(dtype, round_mode)`): every rounding mode to integers and to narrower floats, with
// ties, saturation and NaN; int to float and to bool. Bitcasts: every pair of dtypes, bit for bit,
// and in fused bit arithmetic. CTest runs it on the interp and the cpu backend.
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

// Bit patterns that stay the same through a float dtype of `size` bytes: signalling NaNs are made
// quiet (a float held as double, or computed on, may come back quieted).
std::uint64_t quiet_bits(std::uint64_t bits, std::size_t size) {
  switch (size) {
    case 2: {  // float16 and bfloat16 NaNs alike: set both quiet bits when either reads a NaN
      const bool h = (bits & 0x7C00u) == 0x7C00u && (bits & 0x3FFu) != 0;
      const bool b = (bits & 0x7F80u) == 0x7F80u && (bits & 0x7Fu) != 0;
      return h || b ? bits | 0x0200u | 0x0040u : bits;
    }
    case 4:
      return (bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu) != 0 ? bits | 0x400000u
                                                                            : bits;
    case 8: {
      const std::uint64_t exp = 0x7FF0000000000000ull, man = 0x000FFFFFFFFFFFFFull;
      return (bits & exp) == exp && (bits & man) != 0 ? bits | 0x0008000000000000ull : bits;
    }
    default:
      return bits;
  }
}

bool is_nan16(DataType d, std::uint64_t bits) {
  if (d == DataType::kFloat16) return (bits & 0x7C00u) == 0x7C00u && (bits & 0x3FFu) != 0;
  if (d == DataType::kBFloat16) return (bits & 0x7F80u) == 0x7F80u && (bits & 0x7Fu) != 0;
  return false;
}

// covers: bitcast
TEST(TlCast, BitcastKeepsEveryBit) {
  const tl::Kernel k =
      tl::jit("bitcast", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n}), to = tl::tensor(out, {n});
        for (tl::Value i : tl::range(tl::block_idx() * 16, n, tl::block_num() * 16)) {
          tl::store(tl::load(tx, {16}, {i}).bitcast(to.dtype()), to, {i});
        }
      });
  using D = DataType;
  const std::pair<D, D> pairs[] = {
      {D::kFloat32, D::kInt32}, {D::kInt32, D::kFloat32},  {D::kFloat64, D::kInt64},
      {D::kInt64, D::kFloat64}, {D::kBFloat16, D::kInt16}, {D::kInt16, D::kBFloat16},
      {D::kFloat16, D::kInt16}, {D::kInt16, D::kFloat16},  {D::kFloat16, D::kBFloat16},
      {D::kInt8, D::kUInt8},    {D::kUInt8, D::kInt8},     {D::kFloat32, D::kFloat32}};
  std::mt19937_64 rng(5);
  const std::int64_t n = 1000;  // a partial last tile
  for (const auto& [from, to] : pairs) {
    const std::size_t size = size_of(from);
    TensorStorage x({n}, from);
    auto* px = static_cast<unsigned char*>(x.data());
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t bits = rng();
      if (i < 8) {  // zeros, ones, the sign bit and the top exponent (inf / NaN) patterns
        const std::uint64_t top = size == 8 ? 0xFFF0000000000000ull : 0x7F800000u;
        const std::uint64_t edge[] = {0,      ~0ull, 1ull << (8 * size - 1), top, top | 1, 1,
                                      0x7FFF, 0x3C00};
        bits = edge[i];
      }
      bits = quiet_bits(bits, size);
      std::memcpy(px + i * size, &bits, size);  // little-endian: the low bytes
    }
    for (int cores : core_nums()) {
      TensorStorage out = poisoned({n}, to);
      k.launch(cores, x, out, n);
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint64_t a = 0, b = 0;
        std::memcpy(&a, static_cast<const unsigned char*>(out.data()) + i * size, size);
        std::memcpy(&b, px + i * size, size);
        // A 16-bit float NaN may lose its payload (the interpreter stores canonical ones).
        if (is_nan16(from, b) || is_nan16(to, b)) {
          EXPECT_TRUE(is_nan16(from, a) || is_nan16(to, a)) << name_of(from) << " " << i;
          continue;
        }
        ASSERT_EQ(a, b) << name_of(from) << " -> " << name_of(to) << ", cores " << cores
                        << ", element " << i;
      }
    }
  }
}

// Bit arithmetic on floats in a fused expression: the sign flipped through int32, and 2^e built in
// the exponent field (the step of a coarse exp2).
// covers: bitcast shl
TEST(TlCast, BitcastInArithmetic) {
  const tl::Kernel k = tl::jit("bitcast_math", [](tl::GlobalAddress x, tl::GlobalAddress e,
                                                  tl::GlobalAddress out, tl::Int n) {
    const tl::Value tx = tl::tensor(x, {n}), te = tl::tensor(e, {n});
    const tl::Value to = tl::tensor(out, {2, n});
    const tl::Value v = tl::load(tx, {64}, {0});
    const tl::Value flipped = (v.bitcast(DataType::kInt32) ^ INT32_MIN).bitcast(v.dtype());
    const tl::Value pow2 = ((tl::load(te, {64}, {0}) + 127) << 23).bitcast(v.dtype());
    tl::store(tl::reshape(flipped, {1, 64}), to, {0, 0});
    tl::store(tl::reshape(pow2, {1, 64}), to, {1, 0});
  });
  const std::int64_t n = 64;
  std::mt19937_64 rng(6);
  TensorStorage x = random_tensor({n}, DataType::kFloat32, rng), e({n}, DataType::kInt32);
  auto* pe = static_cast<std::int32_t*>(e.data());
  for (std::int64_t i = 0; i < n; ++i) pe[i] = static_cast<std::int32_t>(i * 4) - 126;  // to 126
  TensorStorage out = poisoned({2, n}, DataType::kFloat32);
  k.launch(1, x, e, out, n);
  const auto* px = static_cast<const float*>(x.data());
  const auto* po = static_cast<const float*>(out.data());
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(po[i], -px[i]) << i;
    EXPECT_EQ(po[n + i], std::ldexp(1.0f, pe[i])) << i;
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
