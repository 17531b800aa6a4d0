// The cpu code generator's plan (src/tl/cpu/plan.h), checked on traced IR without generating
// code: definitions and uses of each value, loop-carried values, which uses read a value by
// name, where fusion chains end, and which reductions take the multi-accumulator loops; which
// loads read in place, which values are fused and which 16-bit tiles 64-lane loops widen in
// blocks, sums and stores computed in their producer's loop, and the work prefetch hints are
// spread over. The kernels' results are checked by the agreement tests that run them.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "src/tl/builder/tracer.h"
#include "src/tl/cpu/plan.h"
#include "src/tl/passes/passes.h"
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

// Traces `body` over pointers of the given dtypes, then an int and a bool, into a verified
// Function run through the pass pipeline, as the jit gives it to a backend.
tl::Function trace_params(const std::vector<DataType>& pointers,
                          const std::function<void(const std::vector<tl::Value>&)>& body) {
  tl::Tracer tracer("plan");
  {
    tl::TraceScope scope(&tracer);
    tl::Function& f = tracer.function();
    std::vector<tl::Value> params;
    for (std::size_t i = 0; i < pointers.size(); ++i) {
      const int p = tracer.new_value({tl::TypeKind::kPointer, pointers[i], {}});
      f.params.push_back({tl::ParamKind::kGlobalAddress, p, "pointer"});
      params.push_back(tl::Value::from_id(p));
    }
    const int n = tracer.new_value({tl::TypeKind::kScalar, DataType::kInt64, {}});
    f.params.push_back({tl::ParamKind::kInt, n, "n"});
    params.push_back(tl::Value::from_id(n));
    const int flag = tracer.new_value({tl::TypeKind::kScalar, DataType::kBool, {}});
    f.params.push_back({tl::ParamKind::kBool, flag, "flag"});
    params.push_back(tl::Value::from_id(flag));
    body(params);
  }
  tl::Function f = tracer.finish();
  tl::verify(f);
  for (const tl::Pass& pass : tl::pipeline(tl::Options{}.opt_level)) pass.run(f);
  tl::verify(f);
  return f;
}

// The ops of `kind` in `r` and its nested regions, in order.
void find_ops(const tl::Region& r, tl::OpKind kind, std::vector<const tl::Op*>& out) {
  for (const tl::Op& o : r.ops) {
    if (o.kind == kind) out.push_back(&o);
    for (const tl::Region& inner : o.regions) find_ops(inner, kind, out);
  }
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

// A tile stored back where it was loaded from, computed elementwise (and through a row max), is
// read in place: the store writes each element after its last read. One stored a column further
// on overlaps its own source at another offset: copied. The in-place tile, inside a loop and
// large, gets a cursor prefetching the next iteration's; its expression is fused into the store.
TEST(TlCpuPlan, LoadsReadInPlaceOnlyWhenNothingClobbersThem) {
  constexpr std::int64_t kRows = 5, kWidth = 1000;
  int v = -1, w = -1, scaled = -1, updated = -1;
  const tl::Function f = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {kRows, kWidth}), ty = tl::tensor(p[1], {kRows, kWidth});
    for (tl::Value r : tl::range(tl::block_idx(), kRows, tl::block_num())) {
      const tl::Value vv = tl::load(tx, {1, kWidth}, {r, 0});
      const tl::Value vs = vv * 3.0f;
      const tl::Value vu = vs + tl::reduce_max(vv);
      tl::store(vu, tx, {r, 0});
      const tl::Value vw = tl::load(ty, {1, kWidth - 1}, {r, 0});
      tl::store(vw * 2.0f, ty, {r, 1});
      v = vv.id(), w = vw.id(), scaled = vs.id(), updated = vu.id();
    }
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  EXPECT_TRUE(plan.at(v).read_in_place);
  EXPECT_TRUE(plan.at(v).overlap_checks.empty());  // only its own tensor is stored to
  EXPECT_TRUE(plan.at(v).next_tile_cursor);
  EXPECT_FALSE(plan.at(v).any_row_stride);
  EXPECT_FALSE(plan.at(v).widened);
  EXPECT_FALSE(plan.at(w).read_in_place);
  EXPECT_FALSE(plan.at(w).next_tile_cursor);
  EXPECT_TRUE(plan.at(scaled).fused);
  EXPECT_TRUE(plan.at(updated).fused);  // evaluated in the store's row loop
  EXPECT_TRUE(plan.hint_work.empty());
}

// A float32 load of [1, n, 1, w] reshaped to [n, w] for a matmul's left operand only is read in
// place at its rows' stride, like a 2-D one: both the load and the reshape carry it.
TEST(TlCpuPlan, AReshapedMatmulLeftOperandIsReadAtAnyRowStride) {
  int v = -1, r = -1, w = -1;
  const tl::Function f = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {2, 64, 4, 32}), ty = tl::tensor(p[1], {32, 16});
    const tl::Value vv = tl::load(tx, {1, 64, 1, 32}, {0, 0, 1, 0});
    const tl::Value vr = tl::reshape(vv, {64, 32});
    const tl::Value vw = tl::load(tx, {2, 64, 1, 32}, {0, 0, 2, 0});  // two row dims: not so
    const tl::Value b = tl::load(ty, {32, 16}, {0, 0});
    tl::store(tl::matmul(vr, b), ty, {0, 0});
    tl::store(tl::matmul(tl::reshape(vw, {128, 32}), b), ty, {0, 0});
    v = vv.id(), r = vr.id(), w = vw.id();
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  EXPECT_TRUE(plan.at(v).any_row_stride);
  EXPECT_TRUE(plan.at(r).any_row_stride);
  EXPECT_FALSE(plan.at(w).any_row_stride);
}

// A load that an if yields unchanged (no op inside uses it) stays live while the if's result
// does: a store to its tensor before the result's last use keeps it from being read in place
// (the cpu backend may point the result at the loaded tile).
TEST(TlCpuPlan, AYieldedLoadIsLiveWhileTheIfResultIs) {
  int v = -1;
  const tl::Function f = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {4, 64}), ty = tl::tensor(p[1], {4, 64});
    const tl::Value vv = tl::load(tx, {1, 64}, {0, 0});
    tl::Var t = vv;
    tl::if_(p[3], [&] { t = tl::full({1, 64}, 5.0f, f32); });
    tl::store(tl::zeros({1, 64}, f32), tx, {0, 0});
    tl::store(t + 1.0f, ty, {0, 0});
    v = vv.id();
  });
  EXPECT_FALSE(tl::cpu::plan_kernel(f).at(v).read_in_place);
  // The store between the load and the if: the if's copy (or pointer) must see the loaded values.
  const tl::Function g = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {4, 64}), ty = tl::tensor(p[1], {4, 64});
    const tl::Value vv = tl::load(tx, {1, 64}, {0, 0});
    tl::store(tl::zeros({1, 64}, f32), tx, {0, 0});
    tl::Var t = vv;
    tl::if_(p[3], [&] { t = tl::full({1, 64}, 5.0f, f32); });
    tl::store(t + 1.0f, ty, {0, 0});
    v = vv.id();
  });
  EXPECT_FALSE(tl::cpu::plan_kernel(g).at(v).read_in_place);
}

// Float32 matmul operands (left and right) are read in place at any row stride; a tile loaded
// from one tensor while another is stored to is read in place when the two do not overlap
// (checked at run time against that tensor).
TEST(TlCpuPlan, MatmulOperandsAtAnyRowStrideAndOverlapChecks) {
  int a = -1, b = -1, c = -1, stored = -1;
  const tl::Function f = trace_params({f32, f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value ta = tl::tensor(p[0], {16, 64}), tb = tl::tensor(p[1], {64, 16});
    const tl::Value tc = tl::tensor(p[2], {16, 64});
    const tl::Value va = tl::load(ta, {16, 64}, {0, 0});
    const tl::Value vb = tl::load(tb, {64, 16}, {0, 0});
    const tl::Value vc = tl::load(tc, {16, 64}, {0, 0});
    tl::store(tl::matmul(va, vb), tc, {0, 0});
    tl::store(vc + 1.0f, ta, {0, 0});
    a = va.id(), b = vb.id(), c = vc.id(), stored = tc.id();
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  EXPECT_TRUE(plan.at(a).read_in_place);
  EXPECT_TRUE(plan.at(a).any_row_stride);
  EXPECT_FALSE(plan.at(a).next_tile_cursor);  // not in a loop
  EXPECT_TRUE(plan.at(b).any_row_stride);     // so is the right operand
  // Both live until the product is stored to tc: read in place where tc does not overlap them.
  EXPECT_TRUE(plan.at(b).read_in_place);
  EXPECT_EQ(plan.at(a).overlap_checks, std::vector<int>{stored});
  EXPECT_EQ(plan.at(b).overlap_checks, std::vector<int>{stored});
  EXPECT_FALSE(plan.at(c).read_in_place);  // tc itself is stored to (the product) while it is live
}

// bfloat16 tiles loaded (and concatenated) only for bfloat16 matmuls are held as bits; one also
// read elementwise is not, nor is a concat of it (nor the concat's other operand). A matmul_acc's
// accumulator made for it alone in the same region is added into in place.
TEST(TlCpuPlan, Bfloat16MatmulOperandsStayBitsAndAccumulatorsInPlace) {
  const DataType bf16 = DataType::kBFloat16;
  int k0 = -1, k1 = -1, cat = -1, q = -1, shared = -1, mixed = -1, acc = -1, product = -1;
  const tl::Function f = trace_params({bf16, bf16, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tk = tl::tensor(p[0], {64, 64}), tq = tl::tensor(p[1], {64, 64});
    const tl::Value to = tl::tensor(p[2], {32, 64});
    const tl::Value vk0 = tl::load(tk, {16, 64}, {0, 0}), vk1 = tl::load(tk, {16, 64}, {16, 0});
    const tl::Value vcat = tl::concat({vk0, vk1}, 0);
    const tl::Value vq = tl::load(tq, {64, 64}, {0, 0});
    const tl::Value vs = tl::load(tk, {16, 64}, {32, 0});  // also read elementwise
    const tl::Value vmixed = tl::concat({vs, tl::load(tk, {16, 64}, {48, 0})}, 0);
    const tl::Value vacc = tl::load(to, {32, 64}, {0, 0}) * 2.0f;
    const tl::Value vproduct = tl::matmul_acc(vacc, vcat, vq);
    tl::store(vproduct + tl::matmul(vmixed, vq), to, {0, 0});
    tl::store(vs.to(f32), to, {0, 0});
    k0 = vk0.id(), k1 = vk1.id(), cat = vcat.id(), q = vq.id(), shared = vs.id();
    mixed = vmixed.id(), acc = vacc.id(), product = vproduct.id();
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  EXPECT_TRUE(plan.at(cat).bits);
  EXPECT_TRUE(plan.at(q).bits);
  EXPECT_TRUE(plan.at(k0).bits);
  EXPECT_TRUE(plan.at(k1).bits);
  EXPECT_FALSE(plan.at(shared).bits);  // also read elementwise
  EXPECT_FALSE(plan.at(mixed).bits);
  EXPECT_TRUE(plan.at(acc).accumulated_in_place);
  EXPECT_FALSE(plan.at(product).accumulated_in_place);
}

// A 16-bit tile read only element by element stays 16-bit; its widening (read three times) is
// fused into each consumer, and both the narrowing store's and the row sum's 64-lane loops read
// it as float32 blocks.
TEST(TlCpuPlan, WidenedTilesAreReadInBlocksByLaneLoops) {
  for (DataType d : {DataType::kBFloat16, DataType::kFloat16}) {
    int l = -1, v = -1, twice = -1, narrowed = -1, square = -1, sum = -1;
    const tl::Function f = trace_params({d, d, f32}, [&](const std::vector<tl::Value>& p) {
      const tl::Value tx = tl::tensor(p[0], {62, 1061}), ty = tl::tensor(p[1], {62, 1061});
      const tl::Value ts = tl::tensor(p[2], {62, 1});
      for (tl::Value r : tl::range(tl::block_idx(), 62, tl::block_num())) {
        const tl::Value vl = tl::load(tx, {1, 1061}, {r, 0});
        const tl::Value vv = vl.to(f32);
        const tl::Value v2 = vv * 2.0f;
        const tl::Value vn = v2.to(d);
        tl::store(vn, ty, {r, 0});
        const tl::Value vsq = vv * vv;
        const tl::Value vsum = tl::reduce_sum(vsq, {1}, true);
        tl::store(vsum, ts, {r, 0});
        l = vl.id(), v = vv.id(), twice = v2.id(), narrowed = vn.id(), square = vsq.id();
        sum = vsum.id();
      }
    });
    const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
    EXPECT_TRUE(plan.at(l).widened) << name_of(d);
    for (int id : {v, twice, narrowed, square}) EXPECT_TRUE(plan.at(id).fused) << id;
    EXPECT_FALSE(plan.at(sum).fused);
    EXPECT_EQ(tl::cpu::lane_blocks(f, plan.values, narrowed), std::vector<int>{l});
    EXPECT_EQ(tl::cpu::lane_blocks(f, plan.values, square), std::vector<int>{l});
    EXPECT_TRUE(tl::cpu::lane_blocks(f, plan.values, sum).empty());
  }
}

// exp's loop also computes its row sum and, its tile lying in place, writes the store: the
// reduction and the store print nothing of their own (the store runs only when it was not sunk).
TEST(TlCpuPlan, RowSumsAndStoresInTheProducersLoop) {
  int e = -1, total = -1;
  const tl::Op* store = nullptr;
  const tl::Function f = trace_params({f32, f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {4, 256}), ty = tl::tensor(p[1], {4, 256});
    const tl::Value ts = tl::tensor(p[2], {4, 1});
    for (tl::Value r : tl::range(tl::block_idx(), 4, tl::block_num())) {
      const tl::Value ve = tl::exp(tl::load(tx, {1, 256}, {r, 0}));
      const tl::Value vt = tl::reduce_sum(ve, {1}, true);
      tl::store(ve, ty, {r, 0});
      tl::store(vt, ts, {r, 0});
      e = ve.id(), total = vt.id();
    }
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  std::vector<const tl::Op*> stores;
  find_ops(f.body, tl::OpKind::kStore, stores);
  ASSERT_EQ(stores.size(), 2u);
  store = stores[0];
  EXPECT_FALSE(plan.at(e).fused);
  EXPECT_TRUE(plan.at(e).nonnegative);  // exp: its sum may add blocks in float32
  ASSERT_NE(plan.at(e).summed, nullptr);
  EXPECT_EQ(plan.at(e).summed->results[0], total);
  EXPECT_TRUE(plan.at(total).computed_by_producer);
  EXPECT_EQ(plan.at(e).sunk_store, store);
  EXPECT_EQ(plan.at(e).in_place_operand, -1);
}

// A loop-carried accumulator read only by the add of each step takes the sum in place.
TEST(TlCpuPlan, CarriedTilesAreOverwrittenInPlace) {
  const tl::Function f = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {8, 64}), ty = tl::tensor(p[1], {64});
    tl::Var acc = tl::zeros({64}, f32);
    for (const tl::Value i : tl::range(0, 8, 1)) {
      acc = acc + tl::reshape(tl::load(tx, {1, 64}, {i, 0}), {64});
    }
    tl::store(acc, ty, {0});
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  std::vector<const tl::Op*> loops;
  find_ops(f.body, tl::OpKind::kFor, loops);
  ASSERT_EQ(loops.size(), 1u);
  const tl::Region& body = loops[0]->regions.at(0);
  ASSERT_EQ(body.args.size(), 2u);
  const int carried = body.args[1], next = body.yields.at(0);
  EXPECT_TRUE(plan.at(carried).consumable);
  EXPECT_EQ(plan.at(next).in_place_operand, carried);
  EXPECT_FALSE(plan.at(next).fused);                          // yielded: read by name
  EXPECT_TRUE(plan.at(loops[0]->operands.at(3)).fills_loop);  // the zeros fill the loop's tile
}

// A tl::prefetch hint is spread over all the vector loops that follow it in its scope: here the
// max, exp-and-sum and store loops of a 4096-float softmax row (4096 lanes each); the max loop,
// first, fetches at most half of the hinted row, all of them together at least the whole row.
// The hint replaces the cursor that would fetch the next iteration's row for the load, though
// the load comes first.
TEST(TlCpuPlan, PrefetchHintWorkIsTheLoopsThatFollow) {
  int v = -1;
  const tl::Function f = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {p[2], 4096}), ty = tl::tensor(p[1], {p[2], 4096});
    for (tl::Value r : tl::range(tl::block_idx(), p[2], tl::block_num())) {
      const tl::Value vv = tl::load(tx, {1, 4096}, {r, 0});
      tl::prefetch(tx, {1, 4096}, {r + tl::block_num(), 0});
      tl::store(tl::softmax(vv), ty, {r, 0});
      v = vv.id();
    }
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  std::vector<const tl::Op*> hints;
  find_ops(f.body, tl::OpKind::kPrefetch, hints);
  ASSERT_EQ(hints.size(), 1u);
  ASSERT_EQ(plan.hint_work.count(hints[0]), 1u);
  const std::int64_t work = plan.hint_work.at(hints[0]);
  EXPECT_EQ(work, 3 * 4096);
  EXPECT_TRUE(plan.at(v).read_in_place);
  EXPECT_FALSE(plan.at(v).next_tile_cursor);
  // Lines fetched per loop: (steps of the loop) x (lines per step); the max loop takes 32 lanes
  // a step, the others 64.
  const std::int64_t bytes = 4096 * 4;
  const std::int64_t max_lines = 4096 / 32 * tl::cpu::hint_lines(bytes, 32, work);
  const std::int64_t other_lines = 4096 / 64 * tl::cpu::hint_lines(bytes, 64, work);
  EXPECT_LE(max_lines, 128) << "the max loop fetches more than half of the hint";
  EXPECT_GE(max_lines + 2 * other_lines, 256) << "the loops do not cover the hinted row";
}

// Of the two branches of an if, one runs: a hint before it is spread over the larger branch's
// loops, not both (each store loop takes the whole next row, 4 lines per 64 lanes).
TEST(TlCpuPlan, PrefetchHintBeforeAnIfCountsOneBranch) {
  const tl::Function f = trace_params({f32, f32}, [&](const std::vector<tl::Value>& p) {
    const tl::Value tx = tl::tensor(p[0], {p[2], 4096}), ty = tl::tensor(p[1], {p[2], 4096});
    for (tl::Value r : tl::range(tl::block_idx(), p[2], tl::block_num())) {
      const tl::Value v = tl::load(tx, {1, 4096}, {r, 0});
      tl::prefetch(tx, {1, 4096}, {r + tl::block_num(), 0});
      tl::if_(
          p[3],
          [&] {
            tl::store(v * 2.0f, ty, {r, 0});
          },
          [&] {
            tl::store(v * 0.5f, ty, {r, 0});
          });
    }
  });
  const tl::cpu::KernelPlan plan = tl::cpu::plan_kernel(f);
  std::vector<const tl::Op*> hints;
  find_ops(f.body, tl::OpKind::kPrefetch, hints);
  ASSERT_EQ(hints.size(), 1u);
  ASSERT_EQ(plan.hint_work.count(hints[0]), 1u);
  EXPECT_EQ(plan.hint_work.at(hints[0]), 4096);
  EXPECT_EQ(tl::cpu::hint_lines(4096 * 4, 64, 4096), 4);
}

}  // namespace
}  // namespace tileops::testing
