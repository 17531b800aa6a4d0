// Casts into the 8-bit float formats with every rounding mode, exhaustively: every code's value,
// the midpoints and quarter points between neighbouring values, values beyond the range, NaN,
// +-inf and +-0, from float32 and float64, against a reference that picks the neighbour by value
// from the decoded code table (HiF8's codes are not ordered by magnitude). CTest runs it on the
// interp and the cpu backend.
#include "tests/tl/tl_test_util.h"
#include "tileops/core/float8.h"

namespace tileops::testing::tl_test {
namespace {

const tl::RoundMode kModes[] = {tl::RoundMode::kRint, tl::RoundMode::kFloor, tl::RoundMode::kCeil,
                                tl::RoundMode::kTrunc, tl::RoundMode::kHalfAway};

// One output per mode: the same input cast five ways.
tl::Kernel cast_all_modes_kernel() {
  return tl::jit(
      "cast_fp8", [](tl::GlobalAddress x, tl::GlobalAddress o0, tl::GlobalAddress o1,
                     tl::GlobalAddress o2, tl::GlobalAddress o3, tl::GlobalAddress o4, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n});
        const tl::Value outs[] = {tl::tensor(o0, {n}), tl::tensor(o1, {n}), tl::tensor(o2, {n}),
                                  tl::tensor(o3, {n}), tl::tensor(o4, {n})};
        for (tl::Value i : tl::range(tl::block_idx() * 16, n, tl::block_num() * 16)) {
          const tl::Value v = tl::load(tx, {16}, {i});
          for (int m = 0; m < 5; ++m) tl::store(v.to(outs[m].dtype(), kModes[m]), outs[m], {i});
        }
      });
}

struct Format {
  DataType dtype;
  bool has_inf;
  bool ties_away;  // rint's tie rule: HiF8 rounds ties away from zero, the OCP formats to even
  double overflow_value;  // where +inf sits for rounding to nearest: one gap past the largest value
  std::vector<std::pair<double, int>> finite;  // (value, code) ascending, one zero
};

Format make_format(DataType d) {
  Format f{d, d != DataType::kFloat8E4M3FN, d == DataType::kHiFloat8, 0, {}};
  for (int code = 0; code < 256; ++code) {
    const auto bits = static_cast<std::uint8_t>(code);
    const double v = d == DataType::kFloat8E4M3FN ? float8_e4m3fn_to_float(bits)
                     : d == DataType::kFloat8E5M2 ? float8_e5m2_to_float(bits)
                                                  : hifloat8_to_float(bits);
    if (std::isfinite(v) && !(v == 0 && std::signbit(v))) f.finite.emplace_back(v, code);
  }
  std::sort(f.finite.begin(), f.finite.end());
  const double max = f.finite.back().first, below_max = f.finite[f.finite.size() - 2].first;
  // HiF8's Inf code S.11.0111.1 is where E = 15 with mantissa 1 would be: 1.5 * 2^15.
  f.overflow_value = d == DataType::kHiFloat8 ? 49152.0 : max + (max - below_max);
  return f;
}

// The value `mode` gives for v in format f, from the code table alone.
double reference(const Format& f, double v, tl::RoundMode mode) {
  if (std::isnan(v)) return v;
  const double max = f.finite.back().first;
  auto stored = [&](double r, double sign_of_zero) {  // overflow and signed zeros as stored
    if (std::isinf(r) || std::fabs(r) > max)
      return f.has_inf ? std::copysign(HUGE_VAL, r) : std::copysign(max, r);
    if (r == 0) return f.dtype == DataType::kHiFloat8 ? 0.0 : std::copysign(0.0, sign_of_zero);
    return r;
  };
  if (std::isinf(v)) return stored(v, v);
  // Neighbours by value, +-inf past the range.
  double lo = -HUGE_VAL, hi = HUGE_VAL;
  int lo_code = 0;
  for (const auto& [value, code] : f.finite) {
    if (value <= v && value >= lo) lo = value, lo_code = code;
    if (value >= v && value <= hi) hi = value;
  }
  if (lo == v) return stored(v, v);
  double r = 0;
  switch (mode) {
    case tl::RoundMode::kFloor:
      r = lo;
      break;
    case tl::RoundMode::kCeil:
      r = hi;
      break;
    case tl::RoundMode::kTrunc:
      r = v > 0 ? lo : hi;
      break;
    case tl::RoundMode::kRint:
    case tl::RoundMode::kHalfAway: {
      // For distances, +-inf sits at +-overflow_value (counted as even: IEEE's 2^(emax+1)).
      const double dl = v - std::max(lo, -f.overflow_value);
      const double dh = std::min(hi, f.overflow_value) - v;
      const bool away = mode == tl::RoundMode::kHalfAway || f.ties_away;
      const bool lo_even = std::isinf(lo) || lo == 0 || (lo_code & 1) == 0;
      if (dl != dh) {
        r = dl < dh ? lo : hi;
      } else if (away) {
        r = v > 0 ? hi : lo;
      } else {
        r = lo_even ? lo : hi;
      }
      break;
    }
  }
  return stored(r, v);
}

// Every value of the format, the points a quarter, half and three quarters between neighbours,
// and beyond the range.
std::vector<double> probes(const Format& f) {
  std::vector<double> xs;
  for (std::size_t i = 0; i < f.finite.size(); ++i) {
    const double a = f.finite[i].first;
    xs.push_back(a);
    const double b = i + 1 < f.finite.size() ? f.finite[i + 1].first : f.overflow_value;
    for (double frac : {0.25, 0.5, 0.75}) xs.push_back(a + (b - a) * frac);
    if (i == 0) {
      for (double frac : {0.25, 0.5, 0.75})
        xs.push_back(-f.overflow_value + (a + f.overflow_value) * frac);
    }
  }
  for (double big : {f.overflow_value, 2 * f.overflow_value, 0x1p100}) {
    xs.push_back(big);
    xs.push_back(-big);
  }
  for (double special : {0.0, -0.0, HUGE_VAL, -HUGE_VAL, std::nan("")}) xs.push_back(special);
  // Tiny values either side of zero (below the smallest magnitude's half).
  xs.push_back(0x1p-60);
  xs.push_back(-0x1p-60);
  return xs;
}

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// covers: to round_modes
TEST(TlCastFp8, EveryModeAgreesWithTheCodeTable) {
  const tl::Kernel k = cast_all_modes_kernel();
  for (DataType d : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2, DataType::kHiFloat8}) {
    const Format f = make_format(d);
    const std::vector<double> xs = probes(f);
    const auto n = static_cast<std::int64_t>(xs.size());
    for (DataType from : {DataType::kFloat32, DataType::kFloat64}) {
      TensorStorage x({n}, from);
      from_doubles(x, xs);
      ASSERT_TRUE(std::equal(xs.begin(), xs.end(), to_doubles(x).begin(), same)) << "exact input";
      std::vector<TensorStorage> outs;
      for (int m = 0; m < 5; ++m) outs.push_back(poisoned({n}, d));
      k.launch(3, x, outs[0], outs[1], outs[2], outs[3], outs[4], n);
      for (int m = 0; m < 5; ++m) {
        const std::vector<double> got = to_doubles(outs[static_cast<std::size_t>(m)]);
        int wrong = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
          const double want = reference(f, xs[i], kModes[m]);
          if (same(got[i], want)) continue;
          if (++wrong <= 5) {
            ADD_FAILURE() << name_of(d) << " from " << name_of(from) << " "
                          << tl::name_of(kModes[m]) << "(" << xs[i] << "): got " << got[i]
                          << ", expected " << want;
          }
        }
        EXPECT_EQ(wrong, 0) << name_of(d) << " " << tl::name_of(kModes[m]) << " of " << n;
      }
    }
  }
}

// Loads widen every code of each format to its value (the cpu backend decodes float8 inline).
TEST(TlCastFp8, LoadsDecodeEveryCode) {
  const tl::Kernel k = tl::jit("widen_fp8", [](tl::GlobalAddress x, tl::GlobalAddress o) {
    tl::store(tl::load(tl::tensor(x, {256}), {256}, {0}).to(DataType::kFloat32),
              tl::tensor(o, {256}), {0});
  });
  for (DataType d : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2, DataType::kHiFloat8}) {
    TensorStorage x({256}, d);
    auto* codes = static_cast<std::uint8_t*>(x.data());
    for (int c = 0; c < 256; ++c) codes[c] = static_cast<std::uint8_t>(c);
    TensorStorage out = poisoned({256}, DataType::kFloat32);
    k.launch(1, x, out);
    const std::vector<double> got = to_doubles(out);
    for (int c = 0; c < 256; ++c) {
      const auto bits = static_cast<std::uint8_t>(c);
      const double want = d == DataType::kFloat8E4M3FN ? float8_e4m3fn_to_float(bits)
                          : d == DataType::kFloat8E5M2 ? float8_e5m2_to_float(bits)
                                                       : hifloat8_to_float(bits);
      EXPECT_TRUE(same(got[static_cast<std::size_t>(c)], want))
          << name_of(d) << " code " << c << ": got " << got[static_cast<std::size_t>(c)]
          << ", expected " << want;
    }
  }
}

// The examples, named: HiF8 floor/ceil step by value, not by code; the range edge.
TEST(TlCastFp8, DirectedRoundingStepsByValue) {
  const tl::Kernel k = cast_all_modes_kernel();
  struct Case {
    DataType d;
    double x;
    int mode;
    double want;
  };
  const Case cases[] = {
      {DataType::kHiFloat8, 3.9, 1, 3.75},
      {DataType::kHiFloat8, 0.95, 2, 1.0},
      {DataType::kHiFloat8, 4.959e-5, 2, 6.103515625e-05},
      {DataType::kFloat8E4M3FN, 449, 4, 448},
      {DataType::kFloat8E4M3FN, 449, 2, 448},
      {DataType::kFloat8E5M2, 61440, 4, HUGE_VAL},
      {DataType::kFloat8E5M2, 61440, 0, HUGE_VAL},
      {DataType::kHiFloat8, 40960, 4, HUGE_VAL},
      {DataType::kHiFloat8, -40960, 0, -HUGE_VAL},
  };
  for (const Case& c : cases) {
    TensorStorage x({1}, DataType::kFloat64);
    from_doubles(x, {c.x});
    std::vector<TensorStorage> outs;
    for (int m = 0; m < 5; ++m) outs.push_back(poisoned({1}, c.d));
    k.launch(1, x, outs[0], outs[1], outs[2], outs[3], outs[4], std::int64_t{1});
    const double got = to_doubles(outs[static_cast<std::size_t>(c.mode)])[0];
    EXPECT_TRUE(same(got, c.want)) << name_of(c.d) << " " << tl::name_of(kModes[c.mode]) << "("
                                   << c.x << ") = " << got << ", expected " << c.want;
    EXPECT_TRUE(same(got, reference(make_format(c.d), c.x, kModes[c.mode])));
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
