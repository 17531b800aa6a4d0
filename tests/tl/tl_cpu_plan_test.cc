// The cpu code generator's plan (src/tl/cpu/plan.h), checked on traced IR without generating
// code: definitions and uses of each value, loop-carried values, which uses read a value by
// name, where fusion chains end, and which reductions take the multi-accumulator loops.
#include <gtest/gtest.h>

#include <functional>

#include "src/tl/builder/tracer.h"
#include "src/tl/cpu/plan.h"
#include "tileops/tl.h"

namespace tileops::testing {
namespace {

const DataType f32 = DataType::kFloat32;

// Traces `body` over two float32 pointers into a Function, as the jit does before its passes.
tl::Function trace(const std::function<void(const tl::Value&, const tl::Value&)>& body) {
  tl::Tracer tracer("plan");
  {
    tl::TraceScope scope(&tracer);
    tl::Function& f = tracer.function();
    const int x = tracer.new_value({tl::TypeKind::kPointer, f32, {}});
    const int y = tracer.new_value({tl::TypeKind::kPointer, f32, {}});
    f.params.push_back({tl::ParamKind::kGlobalAddress, x, "x"});
    f.params.push_back({tl::ParamKind::kGlobalAddress, y, "y"});
    body(tl::Value::from_id(x), tl::Value::from_id(y));
  }
  tl::Function f = tracer.finish();
  tl::verify(f);
  return f;
}

TEST(TlCpuPlan, UsesAndFusionRoots) {
  int a = -1, e = -1, sq = -1, total = -1, as_int = -1, int_total = -1;
  const tl::Function f = trace([&](const tl::Value& x, const tl::Value& y) {
    const tl::Value tx = tl::tensor(x, {8});
    const tl::Value ty = tl::tensor(y, {8});
    const tl::Value va = tl::load(tx, {8}, {0});
    const tl::Value ve = tl::exp(va);
    const tl::Value vsq = ve * ve;                   // two uses by one op
    const tl::Value vtotal = tl::reduce_sum(vsq);    // a float row sum: read element by element
    const tl::Value vint = va.to(DataType::kInt32);  // an integer sum: the interpreter's loop
    const tl::Value vint_total = tl::reduce_sum(vint);
    tl::store(vsq, ty, {0});
    a = va.id(), e = ve.id(), sq = vsq.id(), total = vtotal.id();
    as_int = vint.id(), int_total = vint_total.id();
  });
  const std::vector<tl::cpu::ValuePlan> plan = tl::cpu::plan_values(f);
  ASSERT_EQ(plan.size(), f.types.size());
  const auto& p = [&](int id) -> const tl::cpu::ValuePlan& {
    return plan.at(static_cast<std::size_t>(id));
  };
  // exp(a) * exp(a) is one expression evaluated in the loop of its product, which the sum and
  // the store both read: the product is the root of the chain from the load.
  EXPECT_EQ(p(e).uses, 2);
  ASSERT_EQ(p(e).users.size(), 2u);
  EXPECT_EQ(p(e).users[0], p(e).users[1]);
  EXPECT_TRUE(p(e).elementwise_uses);
  EXPECT_EQ(p(e).fusion_root, sq);
  EXPECT_FALSE(p(sq).elementwise_uses);
  EXPECT_EQ(p(sq).fusion_root, sq);
  EXPECT_EQ(p(sq).uses, 2);
  EXPECT_EQ(p(sq).last_user->kind, tl::OpKind::kStore);
  EXPECT_FALSE(p(sq).raw_use);  // the float sum and the store read it element by element
  // The load feeds the exp and the cast: two elementwise ops with different roots.
  EXPECT_EQ(p(a).uses, 2);
  EXPECT_EQ(p(a).fusion_root, a);
  EXPECT_EQ(p(a).def->kind, tl::OpKind::kLoad);
  EXPECT_TRUE(p(as_int).raw_use);  // the integer sum reads the array by name
  EXPECT_EQ(p(total).uses, 0);
  EXPECT_EQ(p(total).last_user, nullptr);
  EXPECT_EQ(tl::cpu::suffix_run(f, *p(total).def), 8);
  EXPECT_EQ(tl::cpu::suffix_run(f, *p(int_total).def), 0);
  for (const tl::cpu::ValuePlan& v : plan) EXPECT_FALSE(v.carried);
}

TEST(TlCpuPlan, LoopCarriedValuesAndYields) {
  int init = -1;
  const tl::Function f = trace([&](const tl::Value& x, const tl::Value& y) {
    const tl::Value tx = tl::tensor(x, {2, 4});
    const tl::Value ty = tl::tensor(y, {4});
    const tl::Value zeros = tl::zeros({4}, f32);
    init = zeros.id();
    tl::Var acc = zeros;
    for (const tl::Value i : tl::range(0, 2, 1)) {
      acc = acc + tl::reduce_sum(tl::load(tx, {1, 4}, {i, 0}), {0});
    }
    tl::store(acc, ty, {0});
  });
  const std::vector<tl::cpu::ValuePlan> plan = tl::cpu::plan_values(f);
  const tl::Op* loop = nullptr;
  for (const tl::Op& o : f.body.ops) {
    if (o.kind == tl::OpKind::kFor) loop = &o;
  }
  ASSERT_NE(loop, nullptr);
  const tl::Region& body = loop->regions.at(0);
  ASSERT_EQ(body.args.size(), 2u);  // the induction variable and the accumulator
  EXPECT_FALSE(plan.at(static_cast<std::size_t>(body.args[0])).carried);
  const tl::cpu::ValuePlan& carried = plan.at(static_cast<std::size_t>(body.args[1]));
  EXPECT_TRUE(carried.carried);
  EXPECT_EQ(carried.uses, 1);  // the add in the body
  // The zeros are the loop's initial value only (the generator fills the loop's tile with them).
  const tl::cpu::ValuePlan& zeros = plan.at(static_cast<std::size_t>(init));
  EXPECT_EQ(zeros.uses, 1);
  EXPECT_EQ(zeros.last_user, loop);
  EXPECT_TRUE(zeros.raw_use);
  // A yielded value is read by name (the loop copies it into its carried tile).
  const tl::cpu::ValuePlan& next = plan.at(static_cast<std::size_t>(body.yields.at(0)));
  EXPECT_TRUE(next.raw_use);
  EXPECT_FALSE(next.elementwise_uses);
  EXPECT_EQ(next.fusion_root, body.yields.at(0));
}

}  // namespace
}  // namespace tileops::testing
