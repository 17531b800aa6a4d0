// IR passes seen through the traced IR and the results: common-subexpression elimination merges
// equal pure ops (also into a loop body from outside it) but never two loads, which a store
// between them may separate, nor two ops whose attributes differ.
#include <cmath>
#include <string>

#include "src/tl/passes/passes.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const DataType f32 = DataType::kFloat32;

std::size_t count(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// covers: exp range
TEST(TlPasses, EqualPureOpsAreComputedOnce) {
  const tl::Kernel k = tl::jit("twice", [](tl::GlobalAddress x, tl::GlobalAddress y) {
    const tl::Value tx = tl::tensor(x, {16});
    const tl::Value ty = tl::tensor(y, {16});
    const tl::Value a = tl::load(tx, {16}, {0});
    const tl::Value inside = tl::exp(a) * 2.0f;
    tl::Var acc = tl::exp(a) * 2.0f + inside;  // the same exp and mul again
    for (tl::Value i : tl::range(0, 2, 1)) {
      (void)i;
      acc = acc + tl::exp(a);  // dominated by the exp outside the loop
    }
    tl::store(acc, ty, {0});
  });
  std::mt19937_64 rng(3);
  TensorStorage x = random_tensor({16}, f32, rng), y = poisoned({16}, f32);
  const std::vector<double> xs = to_doubles(x);
  const std::string ir = k.ir_for(x, y);
  EXPECT_EQ(count(ir, "= exp "), 1u) << ir;
  EXPECT_EQ(count(ir, "= mul "), 1u) << ir;
  k.launch(1, x, y);
  EXPECT_EQ(compare(y, map(xs, [](double v) { return 6.0 * std::exp(v); }), {1e-5, 1e-6}), "");
}

// covers: load store
TEST(TlPasses, LoadsAroundAStoreAreNotMerged) {
  const tl::Kernel k = tl::jit("reload", [](tl::GlobalAddress x, tl::GlobalAddress y) {
    const tl::Value tx = tl::tensor(x, {8});
    const tl::Value ty = tl::tensor(y, {8});
    tl::store(tl::load(tx, {8}, {0}) + 1.0f, tx, {0});
    tl::store(tl::load(tx, {8}, {0}) * 3.0f, ty, {0});
  });
  std::mt19937_64 rng(4);
  TensorStorage x = random_tensor({8}, f32, rng), y = poisoned({8}, f32);
  const std::vector<double> xs = to_doubles(x);
  EXPECT_EQ(count(k.ir_for(x, y), "= load "), 2u) << k.ir_for(x, y);
  k.launch(1, x, y);
  EXPECT_EQ(compare(y, map(xs, [](double v) { return 3.0 * (v + 1.0); }), {1e-6, 1e-6}), "");
}

// Same kind, operand and result type; only the attributes (slice offsets, rounding) differ.
// covers: copy round_modes
TEST(TlPasses, OpsDifferingOnlyInAttributesStayApart) {
  const tl::Kernel k = tl::jit("halves", [](tl::GlobalAddress x, tl::GlobalAddress y) {
    const tl::Value tx = tl::tensor(x, {16});
    const tl::Value ty = tl::tensor(y, {8});
    const tl::Value a = tl::load(tx, {16}, {0});
    const tl::Value lo = tl::copy(a, {8}, {0});
    const tl::Value hi = tl::copy(a, {8}, {8});
    const tl::Value down = hi.to(DataType::kInt32, tl::RoundMode::kFloor);
    const tl::Value up = hi.to(DataType::kInt32, tl::RoundMode::kCeil);
    tl::store(lo + (down + up).to(f32), ty, {0});
  });
  std::mt19937_64 rng(5);
  TensorStorage x = random_tensor({16}, f32, rng), y = poisoned({8}, f32);
  const std::vector<double> xs = to_doubles(x);
  const std::string ir = k.ir_for(x, y);
  EXPECT_EQ(count(ir, "= slice "), 2u) << ir;
  EXPECT_EQ(count(ir, "round=floor"), 1u) << ir;
  EXPECT_EQ(count(ir, "round=ceil"), 1u) << ir;
  k.launch(1, x, y);
  std::vector<double> expected(8);
  for (std::size_t i = 0; i < 8; ++i) {
    expected[i] = xs[i] + (std::floor(xs[8 + i]) + std::ceil(xs[8 + i]));
  }
  EXPECT_EQ(compare(y, expected, {1e-6, 1e-6}), "");
}

// Constants compare by their bits: 0.0 and -0.0 are different values (1 / x tells them apart).
TEST(TlPasses, SignedZeroConstantsAreNotMerged) {
  EXPECT_NE(tl::OpAttrs(tl::ConstantAttrs{.number = {0.0}}),
            tl::OpAttrs(tl::ConstantAttrs{.number = {-0.0}}));
  EXPECT_EQ(tl::OpAttrs(tl::ConstantAttrs{.number = {std::nan("")}}),
            tl::OpAttrs(tl::ConstantAttrs{.number = {std::nan("")}}));
  tl::Function f;
  f.name = "zeros";
  for (const double zero : {0.0, -0.0, 0.0}) {
    tl::Op op;
    op.kind = tl::OpKind::kConstant;
    op.attrs = tl::ConstantAttrs{.dtype = f32, .number = {zero}};
    op.results = {f.new_value({tl::TypeKind::kScalar, f32, {}})};
    f.body.ops.push_back(op);
  }
  tl::verify(f);
  tl::eliminate_common_subexpressions(f);
  ASSERT_EQ(f.body.ops.size(), 2u) << tl::print(f);  // the second 0.0 merged into the first
  EXPECT_FALSE(std::signbit(f.body.ops[0].as<tl::ConstantAttrs>().number.value));
  EXPECT_TRUE(std::signbit(f.body.ops[1].as<tl::ConstantAttrs>().number.value));
}

}  // namespace
}  // namespace tileops::testing::tl_test
