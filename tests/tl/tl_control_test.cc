// Control flow on the interp backend: runtime loops with loop-carried tl::Vars (scalars and
// tiles, nested), unroll_factor and parallel, static_range, runtime and trace-time if_, block
// indices and num_tiles.
#include <memory>

#include "tests/support/expect_rejected.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const DataType f32 = DataType::kFloat32;
const DataType i64 = DataType::kInt64;

// covers: Var range unroll_factor
TEST(TlControl, VarsBecomeLoopCarriedValues) {
  // out[0] = sum_{i<n} i (scalar Var), out[1..4] = sum of rows of x (tile Var), out[5] = nested.
  const tl::Kernel k =
      tl::jit("carried", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n, 4});
        tl::Var total = 0;
        tl::Var rows = tl::zeros({1, 4}, f32);
        tl::Var nested = 0.0;
        for (tl::Value i : tl::range(n)) {
          total = total + i;
          rows = rows + tl::load(tx, {1, 4}, {i, 0});
          for (tl::Value j : tl::range(0, i, 1, {.unroll_factor = 2})) nested = nested + j.to(f32);
        }
        const tl::Value to = tl::tensor(out, {6});
        tl::store(total.to(f32), to, {0});
        tl::store(tl::reshape(rows, {4}), to, {1});
        tl::store(nested, to, {5});
      });
  std::mt19937_64 rng(21);
  for (int n : {0, 1, 7}) {
    TensorStorage x = random_tensor({std::max(n, 1), 4}, f32, rng);
    TensorStorage out = poisoned({6}, f32);
    k.launch(2, x, out, n);
    const auto xs = to_doubles(x);
    std::vector<double> expected(6, 0);
    for (int i = 0; i < n; ++i) {
      expected[0] += i;
      for (int c = 0; c < 4; ++c) expected[1 + c] += xs[i * 4 + c];
      expected[5] += i * (i - 1) / 2.0;
    }
    EXPECT_EQ(compare(out, expected, tol(f32)), "") << "n=" << n;
  }
  const std::string ir = k.ir_for(TensorStorage({1, 4}, f32), TensorStorage({6}, f32), 1);
  EXPECT_NE(ir.find("{unroll=2}"), std::string::npos) << ir;
}

// covers: parallel
TEST(TlControl, UnchangedVarsAreNotCarriedAndParallelLoopsRun) {
  const tl::Kernel k = tl::jit("parallel", [](tl::GlobalAddress out, tl::Int n) {
    const tl::Value to = tl::tensor(out, {n});
    tl::Var scale = 3.0;  // read, never reassigned in the loop: not loop-carried
    for (tl::Value i : tl::range(0, n, 1, {.parallel = true})) {
      tl::store(i.to(f32) * scale, to, {i});
    }
  });
  TensorStorage out = poisoned({9}, f32);
  k.launch(1, out, 9);
  std::vector<double> expected;
  for (int i = 0; i < 9; ++i) expected.push_back(3.0 * i);
  EXPECT_EQ(compare(out, expected, {0, 0}), "");
  const std::string ir = k.ir_for(out, 9);
  EXPECT_NE(ir.find("{unroll=1, parallel}"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("yield"), std::string::npos) << ir;
}

// covers: static_range
TEST(TlControl, NegativeStepsAndStaticRange) {
  const tl::Kernel k = tl::jit("steps", [](tl::GlobalAddress out, tl::Int n) {
    const tl::Value to = tl::tensor(out, {8});
    tl::Var acc = tl::zeros({8}, i64);
    for (tl::Value i : tl::range(n, -1, -2)) acc = acc + tl::where(tl::arange(8, i64) == i, 1, 0);
    for (int s : tl::static_range(3)) acc = acc * 2 + s;  // traced three times
    tl::store(acc, to, {0});
  });
  TensorStorage out = poisoned({8}, i64);
  k.launch(1, out, 6);
  std::vector<double> expected;
  for (int i = 0; i < 8; ++i)
    expected.push_back((i % 2 == 0 && i <= 6 ? 8 : 0) + 4);  // ((a·2 + 0)·2 + 1)·2 + 2
  EXPECT_EQ(compare(out, expected, {0, 0}), "");
  const std::string ir = k.ir_for(out, 6);
  std::size_t muls = 0;
  for (std::size_t p = ir.find("= mul "); p != std::string::npos; p = ir.find("= mul ", p + 1))
    ++muls;
  EXPECT_EQ(muls, 3u) << ir;
}

// Runtime bounds at the int64 limits run as many iterations as Python's range (a counter that
// stepped past INT64_MAX wrapped around and the loop never ended).
TEST(TlControl, RangesAtTheInt64Limits) {
  const tl::Kernel k =
      tl::jit("count", [](tl::GlobalAddress out, tl::Int start, tl::Int stop, tl::Int step) {
        tl::Var count = tl::zeros({1}, i64);
        tl::Var last = tl::zeros({1}, i64);
        for (tl::Value i : tl::range(start, stop, step)) {
          count = count + 1;
          last = tl::zeros({1}, i64) + i;
        }
        tl::store(tl::concat({count, last}, 0), tl::tensor(out, {2}), {0});
      });
  constexpr std::int64_t kMax = INT64_MAX, kMin = INT64_MIN, kQuarter = std::int64_t{1} << 62;
  struct Case {
    std::int64_t start, stop, step, count, last;
  };
  for (const Case& c :
       {Case{kMax - 1, kMax, kQuarter, 1, kMax - 1}, Case{kMin + 1, kMin, -kQuarter, 1, kMin + 1},
        Case{kMin, kMax, kQuarter, 4, kQuarter}, Case{kMax, kMin, kMin, 2, -1},
        Case{0, 10, 3, 4, 9}, Case{10, 0, -3, 4, 1}, Case{5, 5, 1, 0, 0}}) {
    TensorStorage out = poisoned({2}, i64);
    k.launch(1, out, c.start, c.stop, c.step);
    const auto* got = static_cast<const std::int64_t*>(out.data());
    EXPECT_EQ(got[0], c.count) << c.start << " " << c.stop << " " << c.step;
    EXPECT_EQ(got[1], c.last) << c.start << " " << c.stop << " " << c.step;
  }
}

// covers: if_ if_trace_time Bool
TEST(TlControl, RuntimeAndTraceTimeIf) {
  const tl::Kernel k = tl::jit("branch", [](tl::GlobalAddress out, tl::Int n, tl::Bool flag,
                                            tl::ConstExpr<bool> trace_flag) {
    const tl::Value to = tl::tensor(out, {4});
    tl::Var a = 1.0;
    tl::Var t = tl::full({3}, 2.0, f32);
    tl::if_(
        n > 5, [&] { a = a * 10; }, [&] { t = t + 1; });
    tl::if_(flag, [&] { a = a + 0.5; });
    tl::if_(n, [&] { t = t * n; });         // integer condition: n != 0
    tl::if_(*trace_flag, [&] { a = -a; });  // decided while tracing
    tl::store(a, to, {0});
    tl::store(t, to, {1});
  });
  for (int n : {0, 3, 9}) {
    for (bool flag : {false, true}) {
      for (bool tf : {false, true}) {
        TensorStorage out = poisoned({4}, f32);
        k.launch(3, out, n, flag, tf);
        double a = n > 5 ? 10 : 1, t = n > 5 ? 2 : 3;
        if (flag) a += 0.5;
        if (n != 0) t *= n;
        if (tf) a = -a;
        EXPECT_EQ(compare(out, {a, t, t, t}, {0, 0}), "") << n << flag << tf;
      }
    }
  }
  TensorStorage out({4}, f32);
  EXPECT_EQ(k.ir_for(out, 1, true, true).find("if %") != std::string::npos, true);
  const std::string ir = k.ir_for(out, 1, true, false);
  std::size_t ifs = 0;
  for (std::size_t p = ir.find(" = if "); p != std::string::npos; p = ir.find(" = if ", p + 1))
    ++ifs;
  EXPECT_EQ(ifs, 3u) << ir;  // the ConstExpr branch left no `if` behind
}

// A tile a branch yields unchanged from before the if (the cpu backend points the if's result at
// it there instead of copying it), then its tensor overwritten while that result is still read:
// the result keeps the loaded values (the load is copied, not read in place, as the yield counts
// as a use of it).
// covers: if_ Var load store
TEST(TlControl, IfResultYieldedUnchangedSurvivesAStoreToItsTensor) {
  const tl::Kernel k = tl::jit(
      "if_alias", [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int rows, tl::Bool flag) {
        const tl::Value tx = tl::tensor(x, {rows, 64}), ty = tl::tensor(y, {rows, 64});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, 64}, {r, 0});
          tl::Var t = v;
          tl::if_(flag, [&] { t = tl::full({1, 64}, 5.0f, f32); });
          tl::store(tl::zeros({1, 64}, f32), tx, {r, 0});
          tl::store(t + 1.0f, ty, {r, 0});
        }
      });
  std::mt19937_64 rng(29);
  for (bool flag : {false, true}) {
    TensorStorage x = random_tensor({3, 64}, f32, rng), y = poisoned({3, 64}, f32);
    std::vector<double> expected = to_doubles(x);
    for (double& e : expected) e = flag ? 6.0 : static_cast<double>(static_cast<float>(e) + 1.0f);
    k.launch(2, x, y, 3, flag);
    EXPECT_EQ(compare(y, expected, {0, 0}), "") << flag;
    EXPECT_EQ(compare(x, std::vector<double>(3 * 64, 0.0), {0, 0}), "") << flag;
  }
}

// The two-phase form front-ends use: a branch finished without else, then taken back to add one.
// covers: if_ Var
TEST(TlControl, BranchReopenedForAnElse) {
  const tl::Kernel k = tl::jit("branch2", [](tl::GlobalAddress out, tl::Int n) {
    tl::Var a = 1.0;
    tl::Branch b(n > 5);
    b.then_begin();
    a = a * 10;
    b.then_end();
    b.finish();  // `a` is now the if's result
    b.reopen_else();
    b.else_begin();
    a = a - 3;
    b.else_end();
    b.finish();
    tl::store(a, tl::tensor(out, {1}), {0});
  });
  for (int n : {2, 9}) {
    TensorStorage out = poisoned({1}, f32);
    k.launch(1, out, n);
    EXPECT_EQ(compare(out, {n > 5 ? 10.0 : -2.0}, {0, 0}), "") << n;
  }
  const tl::Kernel late = tl::jit("late_else", [](tl::GlobalAddress out, tl::Int n) {
    tl::Branch b(n > 5);
    b.then_begin();
    b.then_end();
    b.finish();
    tl::store(1.0, tl::tensor(out, {1}), {0});  // traced between the if and its else
    b.reopen_else();
  });
  TensorStorage out = poisoned({1}, f32);
  expect_rejected([&] { late.launch(1, out, 1); }, out, "else_", ErrorKind::kInvalidArgument,
                  {"directly follow"});
}

// A Var first set inside a branch (a name the Python front-end sees assigned there): adopted, it
// is the if's result when both branches set it, and stays unset when only one does.
// covers: if_ Var
TEST(TlControl, AdoptedVarsAreResultsOnlyWhenBothBranchesSetThem) {
  const tl::Kernel k = tl::jit("adopt", [](tl::GlobalAddress out, tl::Int n) {
    tl::Branch b(n > 5);
    b.then_begin();
    tl::Var both(tl::Value(2.0) * 5);
    b.adopt(both);
    tl::Var then_only(tl::Value(7.0) + 0);
    b.adopt(then_only);
    b.then_end();
    b.else_begin();
    both = tl::Value(-3.0) + 0;
    b.else_end();
    b.finish();
    EXPECT_FALSE(then_only.valid()) << "a Var set on one path became a result";
    tl::store(both, tl::tensor(out, {1}), {0});
  });
  for (int n : {2, 9}) {
    TensorStorage out = poisoned({1}, f32);
    k.launch(1, out, n);
    EXPECT_EQ(compare(out, {n > 5 ? 10.0 : -3.0}, {0, 0}), "") << n;
  }
}

// Python destroys Vars in any order: one destroyed while a loop or a branch that holds it is
// open is let go (no result, nothing touched after it is gone), and the others carry on.
// covers: range if_ Var
TEST(TlControl, VarsDestroyedInsideOpenLoopsAndBranches) {
  const tl::Kernel k = tl::jit("drop", [](tl::GlobalAddress out, tl::Int n) {
    tl::Var kept = 1.0;
    auto dropped = std::make_unique<tl::Var>(tl::Value(5.0) + 0);
    for (const tl::Value i : tl::range(n)) {
      (void)i;
      *dropped = *dropped + 1;
      dropped.reset();  // gone before the loop closes
      kept = kept * 2;
    }
    auto in_branch = std::make_unique<tl::Var>(tl::Value(3.0) + 0);
    tl::Branch b(n > 2);
    b.then_begin();
    *in_branch = *in_branch * 7;
    in_branch.reset();
    kept = kept + 10;
    b.then_end();
    b.finish();
    tl::store(kept, tl::tensor(out, {1}), {0});
  });
  for (int n : {0, 3}) {
    TensorStorage out = poisoned({1}, f32);
    k.launch(1, out, n);
    EXPECT_EQ(compare(out, {(1 << n) + (n > 2 ? 10.0 : 0.0)}, {0, 0}), "") << n;
  }
}

// covers: block_idx block_num num_tiles
TEST(TlControl, BlockIndicesAndNumTiles) {
  const tl::Kernel k = tl::jit("blocks", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n) {
    const tl::Value tx = tl::tensor(x, {n, 3});
    const tl::Value to = tl::tensor(out, {64, 2});
    tl::Value row = tl::full({1, 2}, 0, i64) + tl::block_num() * 100;
    row = tl::where(tl::reshape(tl::arange(2, i64), {1, 2}) == 0, tl::num_tiles(tx, 0, 4), row);
    tl::store(row + tl::block_idx() * 1000, to, {tl::block_idx(), 0});
  });
  for (int cores : {1, 3, 16}) {
    TensorStorage x({10, 3}, f32), out = poisoned({64, 2}, i64);
    k.launch(cores, x, out, 10);
    const auto got = to_doubles(out);
    for (int b = 0; b < cores; ++b) {
      EXPECT_EQ(got[2 * b], 3 + 1000 * b);
      EXPECT_EQ(got[2 * b + 1], 100 * cores + 1000 * b);
    }
    EXPECT_EQ(got[2 * cores], -1);  // untouched
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
