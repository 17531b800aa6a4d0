// The asc2 surface in C++ (issue #36): integer `/` truncating toward zero in the asc2 division
// mode (and true division otherwise), TileLocation hints recorded in the IR and checked against
// the tiles' uses, layer_norm's statistics without the normalised dim. Run on interp and cpu.
#include "tests/tl/tl_test_util.h"
#include "tileops/core/error.h"

namespace tileops::testing::tl_test {
namespace {

using GA = tl::GlobalAddress;

// Restores this thread's integer division mode when a test ends, whatever happens.
class DivisionMode {
 public:
  explicit DivisionMode(tl::IntDivision mode) : previous_(tl::set_int_division(mode)) {}
  ~DivisionMode() { tl::set_int_division(previous_); }
  DivisionMode(const DivisionMode&) = delete;
  DivisionMode& operator=(const DivisionMode&) = delete;

 private:
  tl::IntDivision previous_;
};

std::int64_t c_division(std::int64_t a, std::int64_t b) { return b == 0 ? 0 : a / b; }

// covers: div int_division
TEST(TlSurface, IntegerDivisionTruncatesTowardZeroInTheAsc2Mode) {
  const tl::Kernel k = tl::jit("int_div", [](GA a, GA b, GA out, tl::Int n) {
    const tl::Value x = tl::load(tl::tensor(a, {n}), {12}, {0});
    const tl::Value y = tl::load(tl::tensor(b, {n}), {12}, {0});
    const tl::Value to = tl::tensor(out, {2, n});
    tl::store(tl::expand_dims(x / y, 0), to, {0, 0});
    tl::store(tl::expand_dims(x / -4, 0), to, {1, 0});
  });
  const std::vector<double> as = {7, -7, 7, -7, 9, -9, 0, 5, -100, 100, 3, -1};
  const std::vector<double> bs = {2, 2, -2, -2, 3, 3, 5, 0, 7, -7, 4, 1};
  TensorStorage a({12}, DataType::kInt32), b({12}, DataType::kInt32);
  from_doubles(a, as);
  from_doubles(b, bs);
  std::vector<double> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(c_division(as[i], bs[i]));
  for (int i = 0; i < 12; ++i) expected.push_back(c_division(as[i], -4));
  {
    const DivisionMode trunc(tl::IntDivision::kTrunc);
    EXPECT_EQ(tl::int_division(), tl::IntDivision::kTrunc);
    TensorStorage out = poisoned({2, 12}, DataType::kInt32);
    k.launch(1, a, b, out, 12);
    EXPECT_EQ(to_doubles(out), expected);
  }
  EXPECT_EQ(tl::int_division(), tl::IntDivision::kTrue);
}

// covers: div int_division
TEST(TlSurface, IntegerDivisionIsTrueDivisionByDefault) {
  const tl::Kernel k = tl::jit("int_true_div", [](GA a, GA out, tl::Int n) {
    const tl::Value x = tl::load(tl::tensor(a, {n}), {4}, {0});
    tl::store(x / 2, tl::tensor(out, {n}), {0});  // float32
  });
  TensorStorage a({4}, DataType::kInt32);
  from_doubles(a, {7, -7, 1, 0});
  TensorStorage out = poisoned({4}, DataType::kFloat32);
  k.launch(1, a, out, 4);
  EXPECT_EQ(to_doubles(out), (std::vector<double>{3.5, -3.5, 0.5, 0}));
}

// covers: load matmul tile_location
TEST(TlSurface, TileLocationsAreRecordedAndLeaveResultsAlone) {
  const tl::Kernel k = tl::jit("located", [](GA a, GA b, GA out) {
    const tl::Value x =
        tl::load(tl::tensor(a, {4, 8}), {4, 8}, tl::IndexList{0, 0}, 0, tl::TileLocation::kL0A);
    const tl::Value w =
        tl::load(tl::tensor(b, {4, 8}), {4, 8}, tl::IndexList{0, 0}, 0, tl::TileLocation::kL0B);
    tl::store(tl::matmul(x, w.T()), tl::tensor(out, {4, 4}), {0, 0});
  });
  std::mt19937_64 rng(3);
  TensorStorage a = random_tensor({4, 8}, DataType::kFloat32, rng);
  TensorStorage b = random_tensor({4, 8}, DataType::kFloat32, rng);
  TensorStorage out = poisoned({4, 4}, DataType::kFloat32);
  k.launch(1, a, b, out);
  const auto as = to_doubles(a), bs = to_doubles(b), got = to_doubles(out);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      double ref = 0;
      for (int p = 0; p < 8; ++p) ref += as[i * 8 + p] * bs[j * 8 + p];
      EXPECT_NEAR(got[i * 4 + j], ref, 1e-5) << i << "," << j;
    }
  }
  const std::string ir = k.ir_for(a, b, out);
  EXPECT_NE(ir.find("location=L0A"), std::string::npos) << ir;
  EXPECT_NE(ir.find("location=L0B"), std::string::npos) << ir;
}

// covers: load trace_errors tile_location
TEST(TlSurface, AnL0ATileFeedingTheRightOperandIsRejectedAtItsLine) {
  static int line;
  const tl::Kernel k = tl::jit("misplaced", [](GA a, GA out) {
    const tl::Value x =
        tl::load(tl::tensor(a, {4, 4}), {4, 4}, tl::IndexList{0, 0}, 0, tl::TileLocation::kL0A);
    const tl::Value y = tl::load(tl::tensor(a, {4, 4}), {4, 4}, {0, 0});
    line = __LINE__ + 1;
    tl::store(tl::matmul(y, x), tl::tensor(out, {4, 4}), {0, 0});
  });
  TensorStorage a({4, 4}, DataType::kFloat32), out = poisoned({4, 4}, DataType::kFloat32);
  from_doubles(a, std::vector<double>(16, 1.0));
  try {
    k.launch(1, a, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(message.find("tl_surface_test.cc:" + std::to_string(line) + ":"), std::string::npos)
        << message;
    EXPECT_NE(message.find("the right operand of a matmul"), std::string::npos) << message;
  }
  EXPECT_TRUE(std::isnan(to_doubles(out)[0]));
}

// covers: layer_norm
TEST(TlSurface, LayerNormStatisticsWithoutTheNormalisedDim) {
  const tl::Kernel k = tl::jit("ln_stats", [](GA x, GA g, GA b, GA stats) {
    const tl::Value v = tl::load(tl::tensor(x, {3, 16}), {3, 16}, {0, 0});
    const tl::Value gamma = tl::load(tl::tensor(g, {16}), {16}, {0});
    const tl::Value beta = tl::load(tl::tensor(b, {16}), {16}, {0});
    const tl::LayerNorm ln = tl::layer_norm(v, gamma, beta, 1e-5, false);
    EXPECT_EQ(ln.mean.shape(), (std::vector<std::int64_t>{3}));
    const tl::Value ts = tl::tensor(stats, {2, 3});
    tl::store(tl::expand_dims(ln.mean, 0), ts, {0, 0});
    tl::store(tl::expand_dims(ln.rstd, 0), ts, {1, 0});
  });
  std::mt19937_64 rng(4);
  TensorStorage x = random_tensor({3, 16}, DataType::kFloat32, rng);
  TensorStorage g = random_tensor({16}, DataType::kFloat32, rng);
  TensorStorage b = random_tensor({16}, DataType::kFloat32, rng);
  TensorStorage stats = poisoned({2, 3}, DataType::kFloat32);
  k.launch(1, x, g, b, stats);
  const auto xs = to_doubles(x), got = to_doubles(stats);
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 16; ++c) mean += xs[r * 16 + c] / 16;
    for (int c = 0; c < 16; ++c) var += (xs[r * 16 + c] - mean) * (xs[r * 16 + c] - mean) / 16;
    EXPECT_NEAR(got[r], mean, 1e-5);
    EXPECT_NEAR(got[3 + r], 1 / std::sqrt(var + 1e-5), 1e-4 / std::sqrt(var + 1e-5));
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
