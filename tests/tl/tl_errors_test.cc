// Trace-time errors: a wrong kernel is rejected when first launched, with a tileops::Error that
// names the construct and the user's source line, and nothing is written.
#include "tests/support/expect_rejected.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const DataType f32 = DataType::kFloat32;

// Launches `body` as a kernel over (x: f32[16], out: f32[16], n = 16) and expects a trace error
// naming `construct` at line `*line` of this file.
template <typename Body>
void expect_trace_error(Body body, const int* line, const std::string& construct,
                        ErrorKind kind = ErrorKind::kInvalidArgument,
                        std::vector<std::string> details = {}) {
  const tl::Kernel k = tl::jit("bad", body);
  TensorStorage x({16}, f32);
  from_doubles(x, std::vector<double>(16, 1.0));
  TensorStorage out = poisoned({16}, f32);
  try {  // the first trace records the line of the faulty call
    k.launch(2, x, out, 16);
  } catch (const Error&) {
  }
  ASSERT_GT(*line, 0);
  details.push_back("tl_errors_test.cc:" + std::to_string(*line) + ":");
  expect_rejected([&] { k.launch(2, x, out, 16); }, out, construct, kind, details);
}

using GA = tl::GlobalAddress;

// covers: trace_errors
TEST(TlErrors, ShapeMismatchInABinaryOp) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        const tl::Value t = tl::load(tl::tensor(x, {n}), {8}, {0});
        line = __LINE__ + 1;  // the faulty call
        tl::store(t + tl::load(tl::tensor(x, {n}), {4}, {0}), tl::tensor(out, {n}), {0});
      },
      &line, "add", ErrorKind::kInvalidArgument, {"shape mismatch", "[8]", "[4]"});
}

// The cpu backend's tiles live on the stack: one of 8 MiB is refused before compiling, naming it
// (the interpreter runs it).
TEST(TlErrors, TileLargerThanTheCpuStackBudget) {
  static int line;
  const tl::Kernel k = tl::jit(
      "huge",
      [](GA x, GA out, tl::Int n) {
        line = __LINE__ + 1;  // the faulty call
        const tl::Value t = tl::load(tl::tensor(x, {n}), {1 << 21}, {0});
        tl::store(t * 2.0, tl::tensor(out, {n}), {0});
      },
      tl::Options{.backend = "cpu"});
  TensorStorage x({16}, f32), out = poisoned({16}, f32);
  from_doubles(x, std::vector<double>(16, 1.0));
  try {  // the first trace records the line of the faulty call
    k.launch(1, x, out, 16);
  } catch (const Error&) {
  }
  expect_rejected([&] { k.launch(1, x, out, 16); }, out, "load", ErrorKind::kInvalidArgument,
                  {"tl_errors_test.cc:" + std::to_string(line) + ":", "on the stack",
                   "tile<2097152xf32>", "at most 4.0 MiB"});
}

// A range step known only at run time is checked when the loop starts, on both backends: 0 is an
// error, as in Python, rather than a loop of no iterations.
TEST(TlErrors, RangeStepOfZeroAtRunTime) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        line = __LINE__ + 1;  // the faulty call
        for (tl::Value i : tl::range(0, n, n - 16)) {
          tl::store(tl::load(tl::tensor(x, {n}), {16}, {i}), tl::tensor(out, {n}), {i});
        }
      },
      &line, "range", ErrorKind::kInvalidArgument, {"step must not be 0"});
}

TEST(TlErrors, DtypeMismatchInAStore) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        const tl::Value t = tl::load(tl::tensor(x, {n}), {8}, {0});
        line = __LINE__ + 1;  // the faulty call
        tl::store(t.to(DataType::kFloat16), tl::tensor(out, {n}), {0});
      },
      &line, "store", ErrorKind::kInvalidType, {"dtype mismatch", "float16", "float32"});
}

TEST(TlErrors, PrefetchRankMismatch) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        line = __LINE__ + 1;  // the faulty call
        tl::prefetch(tl::tensor(x, {n}), {2, 8}, {0});
        tl::store(tl::load(tl::tensor(x, {n}), {16}, {0}), tl::tensor(out, {n}), {0});
      },
      &line, "prefetch", ErrorKind::kInvalidArgument, {"tile rank 2", "tensor rank 1"});
}

TEST(TlErrors, NonStaticTileShape) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        line = __LINE__ + 1;  // the faulty call
        const tl::Value t = tl::load(tl::tensor(x, {n}), {n}, {0});
        tl::store(t, tl::tensor(out, {n}), {0});
      },
      &line, "load", ErrorKind::kInvalidArgument, {"non-static shape"});
}

TEST(TlErrors, ParallelLoopThatCarriesAValue) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        tl::Var acc = tl::zeros({8}, f32);
        line = __LINE__ + 1;  // the faulty call
        for (tl::Value i : tl::range(0, n, 8, {.parallel = true})) {
          acc = acc + tl::load(tl::tensor(x, {n}), {8}, {i});
        }
        tl::store(acc, tl::tensor(out, {n}), {0});
      },
      &line, "range", ErrorKind::kInvalidArgument, {"parallel=true", "carries a value"});
}

TEST(TlErrors, FloatFunctionOfAnIntegerTile) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::exp(tl::arange(8));
      },
      &line, "exp", ErrorKind::kInvalidType, {"int32"});
}

TEST(TlErrors, LoopCarriedVariableChangesType) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        tl::Var acc = tl::zeros({8}, f32);
        line = __LINE__ + 1;  // the faulty call
        for (tl::Value i : tl::range(n)) {
          acc = tl::reduce_sum(acc) + i;
        }
        tl::store(acc, tl::tensor(out, {n}), {0});
        (void)x;
      },
      &line, "range", ErrorKind::kInvalidType, {"changes type", "tile<8xf32>"});
}

TEST(TlErrors, MatmulInnerDimensions) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::matmul(tl::zeros({4, 8}, f32), tl::zeros({4, 8}, f32));
      },
      &line, "matmul", ErrorKind::kInvalidArgument, {"[4, 8] @ [4, 8]"});
}

TEST(TlErrors, ReductionDimOutOfRange) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::reduce_sum(tl::zeros({4, 8}, f32), {2});
      },
      &line, "reduce_sum", ErrorKind::kInvalidArgument, {"axis 2 out of range"});
}

TEST(TlErrors, ReshapeToAnotherSize) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::reshape(tl::zeros({4, 8}, f32), {3, 8});
      },
      &line, "reshape", ErrorKind::kInvalidArgument, {"[4, 8]", "[3, 8]"});
}

TEST(TlErrors, BreakOutOfARuntimeLoop) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        line = __LINE__ + 1;  // the faulty call
        for (tl::Value i : tl::range(n)) {
          tl::store(tl::load(tl::tensor(x, {n}), {1}, {i}), tl::tensor(out, {n}), {i});
          break;
        }
      },
      &line, "range", ErrorKind::kInvalidArgument, {"left early"});
}

TEST(TlErrors, WrongNumberOfOffsets) {
  static int line;
  expect_trace_error(
      [](GA x, GA, tl::Int n) {
        line = __LINE__ + 1;  // the faulty call
        tl::load(tl::tensor(x, {n}), {8}, {0, 0});
      },
      &line, "load", ErrorKind::kInvalidArgument, {"expected 1 offsets, got 2"});
}

TEST(TlErrors, BitwiseOpOnFloats) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        (void)(tl::zeros({8}, f32) & tl::zeros({8}, f32));
      },
      &line, "bitwise_and", ErrorKind::kInvalidType, {"float32"});
}

TEST(TlErrors, BranchesAssignDifferentTypes) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int n) {
        tl::Var v = tl::zeros({8}, f32);
        line = __LINE__ + 1;  // the faulty call
        tl::if_(n > 3, [&] { v = tl::zeros({4}, f32); });
      },
      &line, "if_", ErrorKind::kInvalidType, {"tile<4xf32>", "tile<8xf32>"});
}

TEST(TlErrors, ConcatOfMismatchedShapes) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::concat({tl::zeros({2, 8}, f32), tl::zeros({2, 4}, f32)}, 0);
      },
      &line, "concat", ErrorKind::kInvalidArgument, {"shape mismatch"});
}

TEST(TlErrors, WhereNeedsABoolCondition) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::where(tl::zeros({8}, f32), 1.0, 2.0);
      },
      &line, "where", ErrorKind::kInvalidType, {"condition must be bool"});
}

TEST(TlErrors, SqueezeOfANonUnitDim) {
  static int line;
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;  // the faulty call
        tl::squeeze(tl::zeros({2, 8}, f32), 0);
      },
      &line, "squeeze", ErrorKind::kInvalidArgument, {"extent 1"});
}

// A value made in a loop body and kept in a plain tl::Value (not a tl::Var) escapes its region:
// a user error reported at the use, with the fix (tl::Var), not an internal error.
TEST(TlErrors, LoopValueUsedAfterTheLoop) {
  static int line;
  expect_trace_error(
      [](GA, GA out, tl::Int n) {
        tl::Value acc = tl::zeros({4}, f32);
        for (tl::Value i : tl::range(n)) acc = acc + i.to(f32);
        line = __LINE__ + 1;  // the faulty call
        tl::store(acc, tl::tensor(out, {n}), {0});
      },
      &line, "store", ErrorKind::kInvalidArgument, {"tl::Var"});
}

// covers: trace_errors
TEST(TlErrors, BitcastToADtypeOfAnotherSize) {
  static int line;
  expect_trace_error(
      [](GA x, GA out, tl::Int n) {
        const tl::Value t = tl::load(tl::tensor(x, {n}), {8}, {0});
        line = __LINE__ + 1;  // the faulty call
        tl::store(t.bitcast(DataType::kInt16).to(f32), tl::tensor(out, {n}), {0});
      },
      &line, "bitcast", ErrorKind::kInvalidType, {"dtype", "float32", "int16"});
}

// A tile's element count and bytes must fit int64: every construct that forms a tile shape is
// refused at trace time with the shape named, on every backend (nothing is allocated).
constexpr std::int64_t k2p32 = std::int64_t{1} << 32;

// covers: trace_errors
TEST(TlErrors, TileShapesBeyondInt64) {
  static int line;
  const std::vector<std::string> overflow = {"tile shape", "overflows int64"};
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;
        tl::zeros({k2p32, k2p32}, f32);
      },
      &line, "full", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(
      [](GA x, GA, tl::Int n) {
        line = __LINE__ + 1;
        tl::load(tl::tensor(x, {n}), {k2p32 << 30}, {0});
      },
      &line, "load", ErrorKind::kInvalidArgument, {"tile shape [4611686018427387904]"});
  expect_trace_error(
      [](GA x, GA, tl::Int n) {
        line = __LINE__ + 1;
        tl::prefetch(tl::tensor(x, {n}), {k2p32 << 29}, {0});
      },
      &line, "prefetch", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(
      [](GA, GA, tl::Int) {
        line = __LINE__ + 1;
        tl::arange(k2p32 << 29);
      },
      &line, "arange", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(
      [](GA, GA, tl::Int) {
        const tl::Value a = tl::zeros({16}, f32);
        line = __LINE__ + 1;
        tl::reshape(a, {k2p32, k2p32, 16, 16});
      },
      &line, "reshape", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(
      [](GA, GA, tl::Int) {
        const tl::Value a = tl::zeros({1}, f32);
        line = __LINE__ + 1;
        tl::broadcast_to(a, {k2p32, k2p32});
      },
      &line, "broadcast_to", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(  // each operand fits; their broadcast does not
      [](GA, GA, tl::Int) {
        const tl::Value a = tl::zeros({k2p32, 1}, f32), b = tl::zeros({1, k2p32}, f32);
        line = __LINE__ + 1;
        (void)(a + b);
      },
      &line, "add", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(
      [](GA, GA, tl::Int) {
        const tl::Value a = tl::zeros({k2p32, 1}, f32), b = tl::zeros({1, k2p32}, f32);
        line = __LINE__ + 1;
        tl::matmul(a, b);
      },
      &line, "matmul", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(
      [](GA, GA, tl::Int) {
        const tl::Value a = tl::zeros({k2p32 << 26}, DataType::kInt8);
        line = __LINE__ + 1;
        tl::concat({a, a, a, a}, 0);
      },
      &line, "concat", ErrorKind::kInvalidArgument, overflow);
  expect_trace_error(  // offset + extent overflows: still out of range, not wrapped inside
      [](GA, GA, tl::Int) {
        const tl::Value a = tl::zeros({8}, f32);
        line = __LINE__ + 1;
        tl::copy(a, {4}, {std::numeric_limits<std::int64_t>::max() - 2});
      },
      &line, "copy", ErrorKind::kInvalidArgument, {"exceeds [8]"});
}

// A tl::tensor whose extents and strides reach beyond int64 bytes is refused at launch (its
// addresses could not be formed exactly); nothing is written.
TEST(TlErrors, TensorGeometryBeyondInt64AtLaunch) {
  static int line;
  const tl::Kernel k = tl::jit("geometry", [](GA x, GA out, tl::Int n, tl::Int rows, tl::Int s0) {
    line = __LINE__ + 1;
    const tl::Value t = tl::tensor(x, {rows, n}, {s0, 1});
    tl::store(tl::load(t, {1, 16}, {0, 0}), tl::tensor(out, {1, n}), {0, 0});
  });
  TensorStorage x({16}, f32), out = poisoned({16}, f32);
  from_doubles(x, std::vector<double>(16, 1.0));
  k.launch(1, x, out, 16, 1, 16);  // fine
  out = poisoned({16}, f32);
  for (auto [rows, s0] : {std::pair{k2p32, k2p32},
                          {k2p32 << 29, std::int64_t{16}},
                          {std::int64_t{2}, std::numeric_limits<std::int64_t>::min()}}) {
    expect_rejected([&] { k.launch(1, x, out, 16, rows, s0); }, out, "tensor",
                    ErrorKind::kInvalidArgument,
                    {"tl_errors_test.cc:" + std::to_string(line) + ":", "beyond int64 bytes"});
  }
}

TEST(TlErrors, TileOpsOutsideAKernel) {
  try {
    tl::exp(1.0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside a kernel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
