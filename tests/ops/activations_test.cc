// vLLM's activations (gelu_and_mul, gelu_tanh_and_mul, fatrelu_and_mul, mul_and_silu, gelu_new,
// gelu_fast, gelu_quick) against float64 references: every dtype, tails, strides, every split
// dim, non-finite values, thread splits, in-place use, the class forms and bad inputs.
#include "tileops/ops/activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::Layout;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The formulas as vLLM's forward_native writes them, in float64, with the limit 0 at -inf.
double gelu_ref(double x) {
  return x == -kInf ? 0.0 : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh_ref(double x) {
  if (x == -kInf) return 0.0;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double gelu_fast_ref(double x) {
  if (x == -kInf) return 0.0;
  return 0.5 * x * (1.0 + std::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
}
double gelu_quick_ref(double x) { return x == -kInf ? 0.0 : x / (1.0 + std::exp(-1.702 * x)); }
double silu_ref(double x) { return x == -kInf ? 0.0 : x / (1.0 + std::exp(-x)); }
double fatrelu_ref(double a, double threshold) { return std::isnan(a) || a > threshold ? a : 0.0; }

enum class Op { kGeluAndMul, kGeluTanhAndMul, kFatreluAndMul, kMulAndSilu, kNew, kFast, kQuick };
constexpr Op kAllOps[] = {Op::kGeluAndMul, Op::kGeluTanhAndMul, Op::kFatreluAndMul, Op::kMulAndSilu,
                          Op::kNew,        Op::kFast,           Op::kQuick};
constexpr Op kGatedOps[] = {Op::kGeluAndMul, Op::kGeluTanhAndMul, Op::kFatreluAndMul,
                            Op::kMulAndSilu};

bool gated(Op op) { return op <= Op::kMulAndSilu; }

const char* name(Op op) {
  constexpr const char* kNames[] = {"gelu_and_mul", "gelu_tanh_and_mul", "fatrelu_and_mul",
                                    "mul_and_silu", "gelu_new",          "gelu_fast",
                                    "gelu_quick"};
  return kNames[static_cast<int>(op)];
}

// f(a, b): b is the second half for the gated forms, unused otherwise.
double reference_of(Op op, double threshold, double a, double b) {
  switch (op) {
    case Op::kGeluAndMul:
      return gelu_ref(a) * b;
    case Op::kGeluTanhAndMul:
      return gelu_tanh_ref(a) * b;
    case Op::kFatreluAndMul:
      return fatrelu_ref(a, threshold) * b;
    case Op::kMulAndSilu:
      return a * silu_ref(b);
    case Op::kNew:
      return gelu_tanh_ref(a);
    case Op::kFast:
      return gelu_fast_ref(a);
    case Op::kQuick:
      return gelu_quick_ref(a);
  }
  return 0.0;
}

// The row-major expected out; dim (>= 0) is the split dim of the gated forms.
std::vector<double> reference(Op op, const Tensor& input, int dim, double threshold) {
  const std::vector<double> x = testing::to_doubles(input);
  std::vector<double> y;
  if (!gated(op)) {
    for (double v : x) y.push_back(reference_of(op, threshold, v, 0.0));
    return y;
  }
  const Dims& shape = input.shape();
  const std::int64_t d = shape[dim] / 2;
  std::int64_t inner = 1;
  for (int k = dim + 1; k < shape.size(); ++k) inner *= shape[k];
  std::int64_t outer = 1;
  for (int k = 0; k < dim; ++k) outer *= shape[k];
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t j = 0; j < d; ++j) {
      for (std::int64_t i = 0; i < inner; ++i) {
        const double a = x[static_cast<std::size_t>((o * 2 * d + j) * inner + i)];
        const double b = x[static_cast<std::size_t>((o * 2 * d + j + d) * inner + i)];
        y.push_back(reference_of(op, threshold, a, b));
      }
    }
  }
  return y;
}

// The call under test; dim and threshold are read by the forms that take them.
void run(Op op, const Tensor& input, int dim, double threshold, const Tensor& out,
         const Context& ctx) {
  switch (op) {
    case Op::kGeluAndMul:
      return gelu_and_mul(input, dim, out, ctx);
    case Op::kGeluTanhAndMul:
      return gelu_tanh_and_mul(input, dim, out, ctx);
    case Op::kFatreluAndMul:
      return fatrelu_and_mul(input, threshold, dim, out, ctx);
    case Op::kMulAndSilu:
      return mul_and_silu(input, dim, out, ctx);
    case Op::kNew:
      return gelu_new(input, out, ctx);
    case Op::kFast:
      return gelu_fast(input, out, ctx);
    case Op::kQuick:
      return gelu_quick(input, out, ctx);
  }
}

// Tighter than tolerance_for's float32 1e-5: float32 math rounded a few times.
testing::Tolerance tolerance(DataType dtype) {
  return dtype == DataType::kFloat32 ? testing::Tolerance{1e-6, 4e-6}
                                     : testing::tolerance_for(dtype);
}

Dims out_shape(Op op, const Dims& shape, int dim) {
  Dims out = shape;
  if (gated(op)) out[normalize_dim(dim, shape.size())] /= 2;
  return out;
}

void check(Op op, const Dims& shape, int dim, DataType dtype, Layout in_layout, Layout out_layout,
           const Context& ctx = {}, double threshold = 0.25) {
  SCOPED_TRACE(std::string(name(op)) + " " + shape.to_string() + " dim " + std::to_string(dim) +
               " " + std::string(name_of(dtype)) + " " + testing::layout_name(in_layout) + " -> " +
               testing::layout_name(out_layout));
  std::mt19937_64 rng(shape.product() + static_cast<std::uint64_t>(dim + 10));
  auto input = testing::random_tensor(shape, dtype, rng, in_layout, -8.0, 8.0);
  auto out = testing::poisoned(out_shape(op, shape, dim), dtype, out_layout);
  run(op, input, dim, threshold, out, ctx);
  const int d = gated(op) ? normalize_dim(dim, shape.size()) : 0;
  EXPECT_EQ(testing::compare(out.view(), reference(op, input, d, threshold), tolerance(dtype)), "");
}

using Param = std::tuple<Op, DataType, std::int64_t, Layout>;

class ActivationsTest : public ::testing::TestWithParam<Param> {};

TEST_P(ActivationsTest, MatchesFloat64Reference) {
  const auto [op, dtype, d, layout] = GetParam();
  testing::for_each_implementation(name(op), [&](const Context& ctx) {
    check(op, {3, 5, 2 * d}, -1, dtype, layout, layout, ctx);
    check(op, {2, 2 * d}, -1, dtype, layout, Layout::kContiguous, ctx);
  });
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, ActivationsTest,
    ::testing::Combine(::testing::ValuesIn(kAllOps),
                       ::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided)));

TEST(Activations, EverySplitDim) {
  for (Op op : kGatedOps) {
    testing::for_each_implementation(name(op), [&](const Context& ctx) {
      for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
        for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
          check(op, {4, 6, 33}, 0, dtype, layout, layout, ctx);
          check(op, {4, 6, 33}, 1, dtype, layout, layout, ctx);
          check(op, {4, 6, 33}, -2, dtype, layout, layout, ctx);
          check(op, {4, 6, 34}, 2, dtype, layout, layout, ctx);
          check(op, {66}, 0, dtype, layout, layout, ctx);
          check(op, {0, 4}, -1, dtype, layout, layout, ctx);  // empty
        }
      }
    });
  }
}

// A transposed input: the contiguous dim is not the last one.
TEST(Activations, TransposedInput) {
  for (Op op : kAllOps) {
    SCOPED_TRACE(name(op));
    std::mt19937_64 rng(4);
    auto storage =
        testing::random_tensor({10, 37}, DataType::kFloat32, rng, Layout::kContiguous, -8.0, 8.0);
    const Tensor input = storage.view().transpose(0, 1);  // [37, 10], strides [1, 37]
    auto out = testing::poisoned(out_shape(op, {37, 10}, -1), DataType::kFloat32);
    run(op, input, -1, 0.5, out, {});
    EXPECT_EQ(
        testing::compare(out.view(), reference(op, input, 1, 0.5), tolerance(DataType::kFloat32)),
        "");
  }
}

// Far tails (exp and x³ overflow float32) stay finite with the right limits; NaN and ±inf
// propagate as float64 does, with 0 at -inf for the gelu forms and silu.
TEST(Activations, ExtremeAndNonFiniteValues) {
  for (Op op : kAllOps) {
    SCOPED_TRACE(name(op));
    TensorStorage input({2, 8}, DataType::kFloat32);
    testing::from_doubles(input, {-1e30, -1e4, -104.5, -89, 89, 1e4, 3e38, -3e38,  //
                                  1.5, 2, -3, 0.5, 1, -1, 0.25, 0.5});
    auto out = testing::poisoned(out_shape(op, {2, 8}, 0), DataType::kFloat32);
    run(op, input, 0, 0.0, out, {});
    EXPECT_EQ(
        testing::compare(out.view(), reference(op, input, 0, 0.0), tolerance(DataType::kFloat32)),
        "");
    for (double v : testing::to_doubles(out)) EXPECT_FALSE(std::isnan(v));
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (std::int64_t d : {7, 37, 4097}) {
        std::mt19937_64 rng(d);
        auto x = testing::random_nonfinite_tensor({3, 2 * d}, dtype, rng, Layout::kStrided, 4);
        auto y = testing::poisoned(out_shape(op, {3, 2 * d}, -1), dtype);
        run(op, x, -1, 0.0, y, {});
        EXPECT_EQ(testing::compare(y.view(), reference(op, x, 1, 0.0), tolerance(dtype)), "")
            << name_of(dtype) << " d " << d;
      }
    }
  }
}

TEST(Activations, FatreluThresholds) {
  TensorStorage input({1, 12}, DataType::kFloat32);
  testing::from_doubles(input, {-2, -0.5, 0, 0.5, 1, 3, 5, 5, 5, 5, 5, 5});
  for (double threshold : {-1.0, 0.0, 0.5, 1.0, 2.5}) {
    auto out = testing::poisoned({1, 6}, DataType::kFloat32);
    fatrelu_and_mul(input, threshold, -1, out);
    EXPECT_EQ(testing::compare(out.view(), reference(Op::kFatreluAndMul, input, 1, threshold),
                               tolerance(DataType::kFloat32)),
              "")
        << "threshold " << threshold;
  }
}

TEST(Activations, SplitsOneLongRowAcrossThreads) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  for (Op op : kAllOps) {
    check(op, {200006}, 0, DataType::kBFloat16, Layout::kContiguous, Layout::kContiguous, ctx);
    check(op, {2, 60000}, 0, DataType::kFloat32, Layout::kStrided, Layout::kContiguous, ctx);
  }
}

// The elementwise forms may write their input in place (out the same view).
TEST(Activations, ElementwiseFormsRunInPlace) {
  for (Op op : {Op::kNew, Op::kFast, Op::kQuick}) {
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
      SCOPED_TRACE(std::string(name(op)) + " " + std::string(name_of(dtype)));
      std::mt19937_64 rng(9);
      auto x = testing::random_tensor({5, 301}, dtype, rng, Layout::kStrided, -8.0, 8.0);
      const std::vector<double> expected = reference(op, x, 0, 0.0);
      run(op, x, -1, 0.0, x, {});
      EXPECT_EQ(testing::compare(x.view(), expected, tolerance(dtype)), "");
    }
  }
}

TEST(Activations, ClassFormsAreCorrectOnNewData) {
  std::mt19937_64 rng(3);
  const DataType dtype = DataType::kBFloat16;
  auto input = testing::random_tensor({4, 200}, dtype, rng, Layout::kStrided);
  auto half = testing::poisoned({4, 100}, dtype);
  auto full = testing::poisoned({4, 200}, dtype);
  const std::function<void(const Tensor&, const Tensor&)> forms[] = {
      GeluAndMul(input, -1, half),
      GeluTanhAndMul(input, -1, half),
      FatreluAndMul(input, 0.25, -1, half),
      MulAndSilu(input, -1, half),
      GeluNew(input, full),
      GeluFast(input, full),
      GeluQuick(input, full)};
  for (Op op : kAllOps) {
    SCOPED_TRACE(name(op));
    const auto& form = forms[static_cast<int>(op)];
    for (int round = 0; round < 2; ++round) {
      auto x = testing::random_tensor({4, 200}, dtype, rng, Layout::kStrided, -8.0, 8.0);
      auto y = testing::poisoned(out_shape(op, {4, 200}, -1), dtype);
      form(x, y);
      EXPECT_EQ(testing::compare(y.view(), reference(op, x, 1, 0.25), tolerance(dtype)), "");
    }
    auto contiguous = testing::random_tensor({4, 200}, dtype, rng);
    TensorStorage& out = gated(op) ? half : full;
    testing::expect_rejected([&] { form(contiguous, out); }, out, "input");
  }
}

TEST(Activations, RejectBadInputs) {
  std::mt19937_64 rng(1);
  const DataType f32 = DataType::kFloat32;
  const auto kType = ErrorKind::kInvalidType;
  const auto kArg = ErrorKind::kInvalidArgument;
  using testing::expect_rejected;
  auto input = testing::random_tensor({4, 64}, f32, rng);
  auto int_input = testing::random_tensor({4, 64}, DataType::kInt32, rng);
  auto half_out16 = testing::poisoned({4, 32}, DataType::kFloat16);
  auto full_out16 = testing::poisoned({4, 64}, DataType::kFloat16);
  for (Op op : kAllOps) {
    SCOPED_TRACE(name(op));
    auto out = testing::poisoned(out_shape(op, {4, 64}, -1), f32);
    auto& out16 = gated(op) ? half_out16 : full_out16;
    expect_rejected([&] { run(op, int_input, -1, 0.0, out, {}); }, out, "input", kType);
    expect_rejected([&] { run(op, input, -1, 0.0, out16, {}); }, out16, "out", kType);
    auto wrong = testing::poisoned({4, 48}, f32);
    expect_rejected([&] { run(op, input, -1, 0.0, wrong, {}); }, wrong, "out", kArg);
    // An out that overlaps input without being its view: input is rows 0-3 of `both`, out
    // starts at row 1.
    auto both = testing::random_tensor({5, 64}, f32, rng);
    const Tensor rows = both.view().with_shape({4, 64}, {64, 1});
    char* row1 = static_cast<char*>(both.view().data()) + 64 * sizeof(float);
    const Tensor overlapping(row1, out.view().shape(), {64, 1}, f32);
    expect_rejected([&] { run(op, rows, -1, 0.0, overlapping, {}); }, both, "out", kArg);
  }
  for (Op op : kGatedOps) {
    SCOPED_TRACE(name(op));
    auto odd = testing::random_tensor({4, 63}, f32, rng);
    auto odd_out = testing::poisoned({4, 31}, f32);
    auto out = testing::poisoned({4, 32}, f32);
    auto scalar = testing::random_tensor({}, f32, rng);
    expect_rejected([&] { run(op, odd, -1, 0.0, odd_out, {}); }, odd_out, "input", kArg);
    expect_rejected([&] { run(op, input, 2, 0.0, out, {}); }, out, "dim", kArg);
    expect_rejected([&] { run(op, input, -3, 0.0, out, {}); }, out, "dim", kArg);
    expect_rejected([&] { run(op, input, 0, 0.0, out, {}); }, out, "out", kArg);  // [2, 64]
    expect_rejected([&] { run(op, scalar, 0, 0.0, out, {}); }, out, "input", kArg);
  }
  auto out = testing::poisoned({4, 32}, f32);
  for (double bad : {std::nan(""), kInf, -kInf, 1e39}) {
    expect_rejected([&] { fatrelu_and_mul(input, bad, -1, out); }, out, "threshold", kArg);
  }
}

}  // namespace
}  // namespace tileops::ops
