// Elementwise constructs on the interp backend: every unary op, binary ops in both operand orders
// (tile, C++ number, runtime scalar), comparisons, logical ops, where, broadcasting and casts with
// rounding modes — against float64 references, on tail shapes, several dtypes and block counts.
#include <algorithm>
#include <cstddef>
#include <functional>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

using Fn = std::function<tl::Value(const tl::Value&, const tl::Value&, const tl::Value&)>;

// out[i, r, c] = fs[i](x[i, r, c], y[i, r, c], s) over [tr, tc] tiles of each case's [rows, cols]
// slice; blocks take tiles round-robin. One kernel runs a group of cases (check): the cpu backend
// compiles once per group, not once per case (most of this test's time).
tl::Kernel ew_kernel(const std::vector<Fn>& fs) {
  return tl::jit("elementwise", [fs](tl::GlobalAddress x, tl::GlobalAddress y,
                                     tl::GlobalAddress out, tl::Float s, tl::Int rows, tl::Int cols,
                                     tl::ConstExpr<int> tr, tl::ConstExpr<int> tc) {
    const auto cases = static_cast<std::int64_t>(fs.size());
    const tl::Value tx = tl::tensor(x, {cases, rows, cols});
    const tl::Value ty = tl::tensor(y, {cases, rows, cols});
    const tl::Value to = tl::tensor(out, {cases, rows, cols});
    const tl::Value nc = tl::ceildiv(cols, *tc);
    for (std::int64_t i = 0; i < cases; ++i) {
      for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(rows, *tr) * nc, tl::block_num())) {
        const tl::Value r = tl::floordiv(t, nc) * *tr;
        const tl::Value c = (t % nc) * *tc;
        const tl::Value a = tl::squeeze(tl::load(tx, {1, *tr, *tc}, {i, r, c}, 1), 0);
        const tl::Value b = tl::squeeze(tl::load(ty, {1, *tr, *tc}, {i, r, c}, 1), 0);
        tl::store(tl::expand_dims(fs[static_cast<std::size_t>(i)](a, b, s), 0), to, {i, r, c});
      }
    }
  });
}

struct Case {
  const char* name;
  Fn f;
  std::function<double(double, double, double)> ref;
  double lo = -3, hi = 3;
};

// Runs every case on its own [5, 37] slice (tiles [2, 16]: tails in both dims), each with inputs
// drawn from its range, in one kernel, for every core count.
void check_group(const std::vector<Case>& cases, DataType in, DataType out, double s) {
  constexpr std::int64_t kRows = 5, kCols = 37, kSlice = kRows * kCols;
  std::vector<Fn> fs;
  for (const Case& c : cases) fs.push_back(c.f);
  const tl::Kernel k = ew_kernel(fs);
  const Dims shape{static_cast<std::int64_t>(cases.size()), kRows, kCols};
  std::mt19937_64 rng(7);
  for (int cores : core_nums()) {
    // Each case's slice holds values from its own range.
    std::vector<double> xs, ys;
    for (const Case& c : cases) {
      for (std::vector<double>* v : {&xs, &ys}) {
        const auto part = to_doubles(
            random_tensor({kRows, kCols}, in, rng, Layout::kContiguous, c.lo, c.hi).view());
        v->insert(v->end(), part.begin(), part.end());
      }
    }
    TensorStorage x(shape, in), y(shape, in);
    from_doubles(x.view(), xs);
    from_doubles(y.view(), ys);
    TensorStorage o = poisoned(shape, out);
    k.launch(cores, x, y, o, s, kRows, kCols, 2, 16);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      std::vector<double> expected(kSlice);
      for (std::size_t e = 0; e < expected.size(); ++e) {
        const std::size_t at = i * kSlice + e;
        expected[e] = cases[i].ref(xs[at], ys[at], s);
      }
      EXPECT_EQ(compare(o.view().slice(0, static_cast<std::int64_t>(i), 1), expected, tol(out)), "")
          << cases[i].name << " " << name_of(in) << " cores " << cores;
    }
  }
}
// The cases in kernels of four: g++ -O3's time grows faster than a kernel's size, so that with an
// empty JIT cache UnaryFloat took 33 s in one kernel per dtype, 18 s in kernels of 8, 14 s of 4,
// 19 s of 2 and 23 s of 1 (where each kernel's fixed costs add up); BinaryBothOperandOrders 27,
// 20, 20, 25 and 28 s.
void check(const std::vector<Case>& cases, DataType in, DataType out, double s = 0.75) {
  constexpr std::size_t kGroup = 4;
  for (std::size_t i = 0; i < cases.size(); i += kGroup) {
    const std::size_t end = std::min(cases.size(), i + kGroup);
    check_group(std::vector<Case>(cases.begin() + static_cast<std::ptrdiff_t>(i),
                                  cases.begin() + static_cast<std::ptrdiff_t>(end)),
                in, out, s);
  }
}
void check(const Case& c, DataType in, DataType out, double s = 0.75) {
  check(std::vector<Case>{c}, in, out, s);
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// covers: abs ceil floor round trunc exp exp2 expm1 log log2 log1p sqrt rsqrt sin cos tan sinh cosh
// tanh erf sigmoid relu silu softplus negative reciprocal
TEST(TlElementwise, UnaryFloat) {
  using V = const tl::Value&;
  const std::vector<Case> cases = {
      {"abs", [](V a, V, V) { return tl::abs(a); },
       [](double x, double, double) { return std::fabs(x); }},
      {"ceil", [](V a, V, V) { return tl::ceil(a); },
       [](double x, double, double) { return std::ceil(x); }},
      {"floor", [](V a, V, V) { return tl::floor(a); },
       [](double x, double, double) { return std::floor(x); }},
      {"round", [](V a, V, V) { return tl::round(a); },
       [](double x, double, double) { return std::nearbyint(x); }},
      {"trunc", [](V a, V, V) { return tl::trunc(a); },
       [](double x, double, double) { return std::trunc(x); }},
      {"exp", [](V a, V, V) { return tl::exp(a); },
       [](double x, double, double) { return std::exp(x); }},
      {"exp2", [](V a, V, V) { return tl::exp2(a); },
       [](double x, double, double) { return std::exp2(x); }},
      {"expm1", [](V a, V, V) { return tl::expm1(a); },
       [](double x, double, double) { return std::expm1(x); }},
      {"log", [](V a, V, V) { return tl::log(a); },
       [](double x, double, double) { return std::log(x); }, 0.1, 5},
      {"log2", [](V a, V, V) { return tl::log2(a); },
       [](double x, double, double) { return std::log2(x); }, 0.1, 5},
      {"log1p", [](V a, V, V) { return tl::log1p(a); },
       [](double x, double, double) { return std::log1p(x); }, -0.5, 5},
      {"sqrt", [](V a, V, V) { return tl::sqrt(a); },
       [](double x, double, double) { return std::sqrt(x); }, 0, 5},
      {"rsqrt", [](V a, V, V) { return tl::rsqrt(a); },
       [](double x, double, double) { return 1 / std::sqrt(x); }, 0.1, 5},
      {"sin", [](V a, V, V) { return tl::sin(a); },
       [](double x, double, double) { return std::sin(x); }},
      {"cos", [](V a, V, V) { return tl::cos(a); },
       [](double x, double, double) { return std::cos(x); }},
      {"tan", [](V a, V, V) { return tl::tan(a); },
       [](double x, double, double) { return std::tan(x); }, -1.2, 1.2},
      {"sinh", [](V a, V, V) { return tl::sinh(a); },
       [](double x, double, double) { return std::sinh(x); }},
      {"cosh", [](V a, V, V) { return tl::cosh(a); },
       [](double x, double, double) { return std::cosh(x); }},
      {"tanh", [](V a, V, V) { return tl::tanh(a); },
       [](double x, double, double) { return std::tanh(x); }},
      {"erf", [](V a, V, V) { return tl::erf(a); },
       [](double x, double, double) { return std::erf(x); }},
      {"sigmoid", [](V a, V, V) { return tl::sigmoid(a); },
       [](double x, double, double) { return sigmoid(x); }},
      {"relu", [](V a, V, V) { return tl::relu(a); },
       [](double x, double, double) { return x > 0 ? x : 0.0; }},
      {"silu", [](V a, V, V) { return tl::silu(a); },
       [](double x, double, double) { return x * sigmoid(x); }},
      {"softplus", [](V a, V, V) { return tl::softplus(a); },
       [](double x, double, double) { return std::log(1 + std::exp(x)); }},
      {"negative", [](V a, V, V) { return -a; }, [](double x, double, double) { return -x; }},
      {"reciprocal", [](V a, V, V) { return tl::reciprocal(a); },
       [](double x, double, double) { return 1 / x; }, 0.5, 4},
  };
  for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    check(cases, d, d);
}

// covers: isnan isinf
TEST(TlElementwise, IsnanIsinfGiveBool) {
  using V = const tl::Value&;
  check(
      std::vector<Case>{
          {"isnan", [](V a, V b, V) { return tl::isnan(tl::log(a - b)); },
           [](double x, double y, double) { return std::isnan(std::log(x - y)) ? 1.0 : 0.0; }},
          {"isinf", [](V a, V, V) { return tl::isinf(1 / tl::floor(a)); },
           [](double x, double, double) { return std::isinf(1 / std::floor(x)) ? 1.0 : 0.0; }, -1,
           2},
      },
      DataType::kFloat32, DataType::kBool);
}

// covers: add sub mul div floordiv mod maximum minimum pow scalar_operands promotion Float
TEST(TlElementwise, BinaryBothOperandOrders) {
  using V = const tl::Value&;
  using R = std::function<double(double, double)>;
  const std::vector<
      std::tuple<const char*, std::function<tl::Value(const tl::Operand&, const tl::Operand&)>, R>>
      ops = {
          {"add", [](const tl::Operand& a, const tl::Operand& b) { return a + b; },
           [](double a, double b) { return a + b; }},
          {"sub", [](const tl::Operand& a, const tl::Operand& b) { return a - b; },
           [](double a, double b) { return a - b; }},
          {"mul", [](const tl::Operand& a, const tl::Operand& b) { return a * b; },
           [](double a, double b) { return a * b; }},
          {"div", [](const tl::Operand& a, const tl::Operand& b) { return a / b; },
           [](double a, double b) { return a / b; }},
          {"floordiv",
           [](const tl::Operand& a, const tl::Operand& b) { return tl::floordiv(a, b); },
           [](double a, double b) { return std::floor(a / b); }},
          {"mod", [](const tl::Operand& a, const tl::Operand& b) { return a % b; },
           [](double a, double b) {
             double r = std::fmod(a, b);
             return r != 0 && (r < 0) != (b < 0) ? r + b : r;
           }},
          {"maximum", [](const tl::Operand& a, const tl::Operand& b) { return tl::maximum(a, b); },
           [](double a, double b) { return std::max(a, b); }},
          {"minimum", [](const tl::Operand& a, const tl::Operand& b) { return tl::minimum(a, b); },
           [](double a, double b) { return std::min(a, b); }},
          {"pow",
           [](const tl::Operand& a, const tl::Operand& b) {
             return tl::pow(tl::abs(a.value) + 0.5, b);
           },
           [](double a, double b) { return std::pow(std::fabs(a) + 0.5, b); }},
      };
  // One kernel per operand order and dtype, over every op.
  for (DataType d : {DataType::kFloat32, DataType::kFloat16}) {
    std::vector<Case> tiles, tile_number, number_tile, tile_scalar, scalar_tile;
    for (const auto& [name, op, ref] : ops) {
      const auto& o = op;
      const R& r = ref;
      tiles.push_back({name, [o](V a, V b, V) { return o(a, b); },
                       [r](double a, double b, double) { return r(a, b); }, 0.5, 3});
      tile_number.push_back({name, [o](V a, V, V) { return o(a, 1.5); },
                             [r](double a, double, double) { return r(a, 1.5); }, 0.5, 3});
      number_tile.push_back({name, [o](V a, V, V) { return o(2.5, a); },
                             [r](double a, double, double) { return r(2.5, a); }, 0.5, 3});
      tile_scalar.push_back({name, [o](V a, V, V s) { return o(a, s); },
                             [r](double a, double, double s) { return r(a, s); }, 0.5, 3});
      scalar_tile.push_back({name, [o](V a, V, V s) { return o(s, a); },
                             [r](double a, double, double s) { return r(s, a); }, 0.5, 3});
    }
    for (const auto* group : {&tiles, &tile_number, &number_tile, &tile_scalar, &scalar_tile}) {
      check(*group, d, d);
    }
  }
}

// covers: bitwise_and bitwise_or bitwise_xor bitwise_not shl shr
TEST(TlElementwise, IntegerOps) {
  using V = const tl::Value&;
  const DataType i32 = DataType::kInt32;
  check(
      std::vector<Case>{
          {"add", [](V a, V b, V) { return a + b * 3; },
           [](double a, double b, double) { return a + b * 3; }, -100, 100},
          {"floordiv", [](V a, V b, V) { return tl::floordiv(a, b); },
           [](double a, double b, double) { return b == 0 ? 0 : std::floor(a / b); }, -100, 100},
          {"mod", [](V a, V, V) { return a % 7; },
           [](double a, double, double) {
             double r = std::fmod(a, 7);
             return r < 0 ? r + 7 : r;
           },
           -100, 100},
          {"and_or_xor", [](V a, V b, V) { return (a & b) | (a ^ 5); },
           [](double a, double b, double) {
             auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
             return static_cast<double>((x & y) | (x ^ 5));
           },
           -100, 100},
          {"shifts", [](V a, V b, V) { return (a << (b & 7)) >> 2; },
           [](double a, double b, double) {
             auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b) & 7;
             return static_cast<double>((x << y) >> 2);
           },
           -100, 100},
          {"bitnot_abs_neg", [](V a, V, V) { return ~a + tl::abs(a) - (-a) + tl::relu(a); },
           [](double a, double, double) { return -a - 1 + std::fabs(a) + a + std::max(a, 0.0); },
           -100, 100},
          {"min_max", [](V a, V b, V) { return tl::maximum(a, b) * 2 + tl::minimum(a, 0); },
           [](double a, double b, double) { return std::max(a, b) * 2 + std::min(a, 0.0); }, -100,
           100},
      },
      i32, i32);
  // True division of ints gives float32.
  check({"truediv", [](V a, V, V) { return a / 4; }, [](double a, double, double) { return a / 4; },
         -100, 100},
        i32, DataType::kFloat32);
}

// covers: eq ne lt le gt ge logical_and logical_or logical_not where
TEST(TlElementwise, ComparisonsLogicalAndWhere) {
  using V = const tl::Value&;
  const DataType f32 = DataType::kFloat32, b1 = DataType::kBool;
  check(
      std::vector<Case>{
          {"lt", [](V a, V b, V) { return a < b; },
           [](double a, double b, double) { return a < b ? 1.0 : 0.0; }},
          {"le_rev", [](V a, V, V) { return 0.5 <= a; },
           [](double a, double, double) { return 0.5 <= a ? 1.0 : 0.0; }},
          {"gt_ge", [](V a, V b, V) { return tl::logical_and(a > b, a >= 0); },
           [](double a, double b, double) { return a > b && a >= 0 ? 1.0 : 0.0; }},
          {"eq_ne",
           [](V a, V b, V) { return tl::logical_or(tl::floor(a) == 1, tl::floor(b) != 0); },
           [](double a, double b, double) {
             return std::floor(a) == 1 || std::floor(b) != 0 ? 1.0 : 0.0;
           }},
          {"not", [](V a, V, V) { return !(a > 0); },
           [](double a, double, double) { return a > 0 ? 0.0 : 1.0; }},
      },
      f32, b1);
  check({"where", [](V a, V b, V) { return tl::where(a > b, a, b * 2); },
         [](double a, double b, double) { return a > b ? a : b * 2; }},
        f32, f32);
  check({"where_scalar", [](V a, V, V s) { return tl::where(a > 0, s, a); },
         [](double a, double, double s) { return a > 0 ? s : a; }},
        DataType::kFloat16, DataType::kFloat16);
}

}  // namespace
}  // namespace tileops::testing::tl_test
