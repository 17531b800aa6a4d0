// scaled_softmax against a float64 reference, per active implementation: tails, strides, every
// dtype, poisoned outputs, non-finite rows, in place, the class form and bad inputs.
#include "tileops/ops/scaled_softmax.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/scoped_env.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;

using testing::Layout;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Softmax outputs lie in [0, 1] and may be far below 1e-3, so the tolerance is relative:
// float32: Exp is within 1 ulp, the shifted argument scale·x − max carries ~|max|·2^-24 and the
// sum ~n·2^-24 over the accumulators; float16/bfloat16: the final rounding (2^-11 / 2^-8
// relative) dominates; atol only covers float16 subnormals and float32 underflow.
testing::Tolerance softmax_tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
      return {1e-7, 1e-3};
    case DataType::kBFloat16:
      return {1e-9, 8e-3};
    default:
      return {1e-12, 2e-5};
  }
}

// Row softmax of scale·x in float64; rows holding NaN or +inf, or all -inf, become NaN. The
// exponent is scale · (x - a), a the x of the max: two roundings of double precision, and no
// subtraction follows the product, which a compiler contracting scale · x - max into a
// multiply-add (GCC on aarch64) turned into the product's rounding error: 1e19 at 3e38 · 1e-3.
std::vector<double> reference(const std::vector<double>& x, double scale, std::int64_t width) {
  std::vector<double> y(x.size());
  for (std::size_t row = 0; row < x.size() / width; ++row) {
    const double* in = &x[row * width];
    double* out = &y[row * width];
    double m = -kInf, a = 0.0;
    bool bad = false;
    for (std::int64_t i = 0; i < width; ++i) {
      const double v = scale * in[i];
      bad = bad || std::isnan(v) || v == kInf;
      if (v > m) m = v, a = in[i];
    }
    if (bad || m == -kInf) {
      std::fill(out, out + width, kNaN);
      continue;
    }
    double sum = 0.0;
    for (std::int64_t i = 0; i < width; ++i) sum += std::exp(scale * (in[i] - a));
    for (std::int64_t i = 0; i < width; ++i) out[i] = std::exp(scale * (in[i] - a)) / sum;
  }
  return y;
}

using Param = std::tuple<DataType, std::int64_t, Layout, Layout, int>;  // ..., implementation

class ScaledSoftmaxTest : public ::testing::TestWithParam<Param> {};

TEST_P(ScaledSoftmaxTest, MatchesFloat64Reference) {
  const auto [dtype, width, in_layout, out_layout, index] = GetParam();
  std::mt19937_64 rng(42);
  const Dims shape{3, 5, width};
  for (const double scale : {0.37, -1.5, 8.0}) {
    auto input = testing::random_tensor(shape, dtype, rng, in_layout);
    auto out = testing::poisoned(shape, dtype, out_layout);
    scaled_softmax(input, scale, out, testing::with_implementation(index));
    const auto expected = reference(testing::to_doubles(input), scale, width);
    EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
        << "scale " << scale;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, ScaledSoftmaxTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::ValuesIn(testing::cpu_implementations("scaled_softmax"))));

// Scaled values up to ±400: e^400 overflows float32, so only the max shift keeps this finite;
// many entries underflow to 0.
TEST(ScaledSoftmax, LargeScaleIsStable) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    std::mt19937_64 rng(5);
    auto input = testing::random_tensor({6, 300}, DataType::kFloat32, rng);
    auto out = testing::poisoned({6, 300}, DataType::kFloat32);
    scaled_softmax(input, 200.0, out);
    const auto expected = reference(testing::to_doubles(input), 200.0, 300);
    EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(DataType::kFloat32)), "");
  });
}

// Rows of a large max, whose max · scale · log2 e rounds by as much as the exp's range (a row of
// 1e10s read NaN in the tl implementation), and whose x · scale rounds by 0.4 at scale 1e-3
// (the exponent of targets without FMA was off by that much).
TEST(ScaledSoftmax, LargeMaxRowsAreAccurate) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    const std::int64_t width = 67;
    std::mt19937_64 rng(11);
    auto input = testing::random_tensor({3, width}, DataType::kFloat32, rng);
    auto values = testing::to_doubles(input);
    for (std::int64_t i = 0; i < width; ++i) {
      values[i] = 1.0e10;
      values[width + i] = -1.0e10 + 1024.0 * std::round(4.0 * values[width + i]);  // float32 ulps
      values[2 * width + i] = i % 2 == 0 ? 3.0e38 : -3.0e38;
    }
    testing::from_doubles(input, values);
    for (const double scale : {1.0, -1.0, 1.0e-3, -1.0e-3}) {
      auto out = testing::poisoned({3, width}, DataType::kFloat32);
      scaled_softmax(input, scale, out);
      EXPECT_EQ(testing::compare(out.view(), reference(values, scale, width),
                                 softmax_tolerance(DataType::kFloat32)),
                "")
          << "scale " << scale;
    }
  });
}

TEST(ScaledSoftmax, ZeroScaleIsUniform) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    std::mt19937_64 rng(6);
    auto input = testing::random_tensor({2, 37}, DataType::kBFloat16, rng);
    auto out = testing::poisoned({2, 37}, DataType::kBFloat16);
    scaled_softmax(input, 0.0, out);
    const std::vector<double> expected(2 * 37, 1.0 / 37.0);
    EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(DataType::kBFloat16)), "");
  });
}

// -inf entries get exactly 0; a row of only -inf, or with a NaN or +inf, is NaN throughout
// (torch.softmax does the same); other rows are unaffected.
TEST(ScaledSoftmax, NonFiniteRows) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      const std::int64_t width = 1045;  // a whole 1024-lane chunk of the tl kernel and a tail
      std::mt19937_64 rng(9);
      auto input = testing::random_tensor({5, width}, dtype, rng);
      auto values = testing::to_doubles(input);
      for (std::int64_t i = 0; i < width; i += 3) values[0 * width + i] = -kInf;  // some -inf
      for (std::int64_t i = 0; i < width; ++i) values[1 * width + i] = -kInf;     // all -inf
      values[2 * width + 1040] = kNaN;
      values[3 * width + 4] = kInf;
      values[4 * width + 17] = -kNaN;  // a NaN with the sign bit set
      testing::from_doubles(input, values);
      // A negative scale turns +inf into -inf and -inf into +inf; 0 makes every finite x equal.
      // The tl implementation compiles a kernel per dtype and sign of the scale (seconds each, in
      // three CTest variants): the three signs on float32, the positive one on 16-bit dtypes.
      const std::vector<double> scales = dtype == DataType::kFloat32
                                             ? std::vector<double>{0.5, -0.5, 0.0}
                                             : std::vector<double>{0.5};
      for (const double scale : scales) {
        auto out = testing::poisoned({5, width}, dtype);
        scaled_softmax(input, scale, out);
        const auto expected = reference(values, scale, width);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << ", scale " << scale;
        if (scale > 0) {
          const auto got = testing::to_doubles(out);
          for (std::int64_t i = 0; i < width; i += 3) EXPECT_EQ(got[i], 0.0) << i;
        }
      }
    }
  });
}

// Outputs above the streaming threshold (0 here): the tl kernel then stashes float32 rows in its
// scratch row, not in out, and streams the stores; also in place.
TEST(ScaledSoftmax, StreamedStores) {
  const testing::ScopedEnv stream("TILEOPS_TL_STREAM_BYTES", "0");
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    for (const DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
      for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        std::mt19937_64 rng(5);
        auto input = testing::random_tensor({3, 1030}, dtype, rng, layout);
        auto out = testing::poisoned({3, 1030}, dtype, layout);
        const auto expected = reference(testing::to_doubles(input), 0.37, 1030);
        scaled_softmax(input, 0.37, out);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << " " << testing::layout_name(layout);
        scaled_softmax(input, 0.37, input);
        EXPECT_EQ(testing::compare(input.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << " " << testing::layout_name(layout) << " in place";
      }
    }
  });
}

// 16-bit rows normalised during the next row's exp pass (pipelined) and in a third pass: the
// tl kernel takes one form per CPU (TILEOPS_TL_SOFTMAX_PIPELINE forces either). 7 rows of 2100
// on the pool's blocks: several rows per block, each a whole chunk, another and a masked one.
// One 16-bit dtype per form (each is a kernel compile of seconds; both share the code).
TEST(ScaledSoftmax, SixteenBitRowsPipelinedAndInThreePasses) {
  const std::pair<const char*, DataType> forms[] = {{"1", DataType::kFloat16},
                                                    {"0", DataType::kBFloat16}};
  for (const auto& form : forms) {
    const char* const pipeline = form.first;
    const DataType dtype = form.second;
    const testing::ScopedEnv env("TILEOPS_TL_SOFTMAX_PIPELINE", pipeline);
    testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
      for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        std::mt19937_64 rng(9);
        auto input = testing::random_tensor({7, 2100}, dtype, rng, layout);
        auto out = testing::poisoned({7, 2100}, dtype, layout);
        const auto expected = reference(testing::to_doubles(input), 0.37, 2100);
        ops::scaled_softmax(input, 0.37, out, ctx);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
            << "TILEOPS_TL_SOFTMAX_PIPELINE=" << pipeline << " " << name_of(dtype) << " "
            << testing::layout_name(layout);
      }
    });
  }
}

TEST(ScaledSoftmax, InPlace) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
        std::mt19937_64 rng(7);
        auto x = testing::random_tensor({9, 130}, dtype, rng, layout);
        const auto expected = reference(testing::to_doubles(x), 0.125, 130);
        scaled_softmax(x, 0.125, x);
        EXPECT_EQ(testing::compare(x.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << " " << testing::layout_name(layout);
      }
    }
  });
}

TEST(ScaledSoftmax, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    std::mt19937_64 rng(3);
    auto input = testing::random_tensor({4, 100}, DataType::kFloat16, rng);
    auto out = testing::poisoned({4, 100}, DataType::kFloat16);
    const ScaledSoftmax op(input, 0.75, out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = testing::random_tensor({4, 100}, DataType::kFloat16, rng);
      auto y = testing::poisoned({4, 100}, DataType::kFloat16);
      op(x, y);
      const auto expected = reference(testing::to_doubles(x), 0.75, 100);
      EXPECT_EQ(testing::compare(y.view(), expected, softmax_tolerance(DataType::kFloat16)), "");
    }
    auto other = testing::poisoned({5, 100}, DataType::kFloat16);
    EXPECT_THROW(op(other, other), Error);
  });
}

TEST(ScaledSoftmax, RejectsBadInputs) {
  testing::for_each_implementation("scaled_softmax", [&](const Context& ctx) {
    const auto scaled_softmax = [&](auto&&... a) { ops::scaled_softmax(a..., ctx); };  // under test
    std::mt19937_64 rng(1);
    auto input = testing::random_tensor({4, 64}, DataType::kFloat32, rng);
    auto int_input = testing::random_tensor({4, 64}, DataType::kInt32, rng);
    auto scalar = testing::random_tensor({}, DataType::kFloat32, rng);
    auto out = testing::poisoned({4, 64}, DataType::kFloat32);
    auto half_out = testing::poisoned({4, 64}, DataType::kFloat16);
    auto short_out = testing::poisoned({4, 63}, DataType::kFloat32);
    auto scalar_out = testing::poisoned({}, DataType::kFloat32);
    expect_rejected([&] { scaled_softmax(int_input, 1.0, out); }, out, "input",
                    ErrorKind::kInvalidType);
    expect_rejected([&] { scaled_softmax(input, 1.0, half_out); }, half_out, "out",
                    ErrorKind::kInvalidType);
    expect_rejected([&] { scaled_softmax(input, 1.0, short_out); }, short_out, "out");
    expect_rejected([&] { scaled_softmax(scalar, 1.0, scalar_out); }, scalar_out, "input");
    expect_rejected([&] { scaled_softmax(input, kInf, out); }, out, "scale");
    expect_rejected([&] { scaled_softmax(input, kNaN, out); }, out, "scale");
    expect_rejected([&] { scaled_softmax(input, 1e39, out); }, out, "scale");
    try {
      scaled_softmax(int_input, 1.0, out);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidType);
    }
    try {
      scaled_softmax(input, kNaN, out);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    }
  });
}

}  // namespace
}  // namespace tileops::ops
