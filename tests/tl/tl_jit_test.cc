// tl::jit kernel objects: options, the specialisation cache, the stable IR text, the verifier on
// hand-built IR, argument checks, dump_dir/print_ir and concurrent launches.
#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/support/expect_rejected.h"
#include "tests/tl/tl_test_util.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::testing::tl_test {
namespace {

const DataType f32 = DataType::kFloat32;

tl::Kernel scale_kernel(std::atomic<int>* traces = nullptr, tl::Options options = {}) {
  return tl::jit(
      "scale",
      [traces](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int n, tl::ConstExpr<double> factor) {
        if (traces != nullptr) ++*traces;
        const tl::Value tx = tl::tensor(x, {n});
        const tl::Value ty = tl::tensor(y, {n});
        for (tl::Value i : tl::range(tl::block_idx() * 32, n, tl::block_num() * 32)) {
          tl::store(tl::load(tx, {32}, {i}) * *factor, ty, {i});
        }
      },
      std::move(options));
}

// covers: options
TEST(TlJit, OptionsAreValidatedByName) {
  tl::Options o;
  o.set("opt_level", std::int64_t{3}).set("debug", true).set("backend", std::string("interp"));
  EXPECT_EQ(o.opt_level, 3);
  const TensorStorage none;
  expect_rejected([&] { o.set("optimise", true); }, none, "optimise");
  expect_rejected([&] { o.set("opt_level", std::int64_t{4}); }, none, "opt_level");
  expect_rejected([&] { o.set("backend", std::string("gpu")); }, none, "backend");
  expect_rejected([&] { o.set("print_ir", std::int64_t{1}); }, none, "print_ir",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { scale_kernel(nullptr, tl::Options{.opt_level = 0}); }, none, "opt_level");
}

// covers: cache always_compile
TEST(TlJit, CacheKeyedOnConstExprsDtypesAndOptionsNotScalars) {
  std::atomic<int> traces = 0;
  const tl::Kernel k = scale_kernel(&traces);
  TensorStorage x({100}, f32), y({100}, f32), xh({100}, DataType::kFloat16),
      yh({100}, DataType::kFloat16);
  from_doubles(x, std::vector<double>(100, 2.0));
  from_doubles(xh, std::vector<double>(100, 2.0));
  k.launch(1, x, y, 100, 1.5);
  k.launch(3, x, y, 50, 1.5);  // new scalar value and block count: same specialisation
  EXPECT_EQ(traces, 1);
  k.launch(1, x, y, 100, 2.5);    // new ConstExpr
  k.launch(1, xh, yh, 100, 2.5);  // new dtypes
  EXPECT_EQ(traces, 3);
  EXPECT_EQ(k.num_specialisations(), 3u);
  EXPECT_EQ(compare(yh, std::vector<double>(100, 5.0), {0, 0}), "");
  // Floats that differ only past a 6th decimal, or below 5e-7, are new ConstExprs too.
  for (const double factor : {1.0000001, 1e-7, 1.5e-7}) {
    k.launch(1, x, y, 100, factor);
    EXPECT_EQ(compare(y, std::vector<double>(100, 2.0 * factor), tol(f32)), "") << factor;
  }
  EXPECT_EQ(k.num_specialisations(), 6u);
  // always_compile re-traces every launch.
  std::atomic<int> again = 0;
  const tl::Kernel fresh = scale_kernel(&again, tl::Options{.always_compile = true});
  fresh.launch(1, x, y, 100, 1.5);
  fresh.launch(1, x, y, 100, 1.5);
  EXPECT_EQ(again, 2);
}

// covers: ConstExpr
TEST(TlJit, ShapeConstExprsAndHelperFunctions) {
  // A C++ helper is a sub-kernel: it is inlined while tracing, specialised by its arguments.
  const auto scaled_tile = [](const tl::Value& t, const std::vector<std::int64_t>& shape,
                              double factor) {
    tl::Shape s(shape.begin(), shape.end());
    return tl::load(t, s, {0, 0}) * factor;
  };
  const tl::Kernel k =
      tl::jit("shapes", [scaled_tile](tl::GlobalAddress x, tl::GlobalAddress y,
                                      tl::ConstExpr<std::vector<std::int64_t>> shape) {
        const tl::Value tx = tl::tensor(x, {3, 5});
        tl::store(scaled_tile(tx, *shape, 2.0) + scaled_tile(tx, *shape, 1.0),
                  tl::tensor(y, {3, 5}), {0, 0});
      });
  TensorStorage x({3, 5}, f32);
  std::vector<double> xs(15);
  for (int i = 0; i < 15; ++i) xs[i] = i;
  from_doubles(x, xs);
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{2, 4}, {4, 8}}) {
    TensorStorage y = poisoned({3, 5}, f32);
    k.launch(3, x, y, shape);
    const auto got = to_doubles(y);
    for (int i = 0; i < 15; ++i) {
      const bool inside = i / 5 < shape[0] && i % 5 < shape[1];
      EXPECT_EQ(std::isnan(got[i]) ? -1 : got[i], inside ? 3.0 * i : -1) << i;
    }
  }
  EXPECT_EQ(k.num_specialisations(), 2u);
}

TEST(TlJit, StableIrText) {
  const tl::Kernel k = tl::jit("tiny", [](tl::GlobalAddress x, tl::Int n) {
    const tl::Value t = tl::tensor(x, {n});
    tl::store(tl::exp(tl::load(t, {4}, {0})) + 1, t, {0});
  });
  TensorStorage x({4}, f32);
  const std::string expected =
      "kernel @tiny(%0: ptr<f32>, %1: i64) {\n"
      "  %2 = const 0 : i64\n"
      "  %3 = const 0 : f32\n"
      "  %4 = const 1 : f32\n"
      "  %5 = tensor %0, %1 : tensor<1xf32>\n"
      "  %6 = load %5, %2, %3 : tile<4xf32>\n"
      "  %7 = exp %6 : tile<4xf32>\n"
      "  %8 = add %7, %4 : tile<4xf32>\n"
      "  store %8, %5, %2\n"
      "}\n";
  EXPECT_EQ(k.ir_for(x, 4), expected);
  // Another kernel object with the same body prints (and hashes) the same.
  const tl::Kernel twin = tl::jit("tiny", [](tl::GlobalAddress x, tl::Int n) {
    const tl::Value t = tl::tensor(x, {n});
    tl::store(tl::exp(tl::load(t, {4}, {0})) + 1, t, {0});
  });
  EXPECT_EQ(twin.ir_for(x, 4), expected);
}

// covers: launch block_num
TEST(TlJit, LaunchOnAPoolRunsItsThreadsAsCoreNumZero) {
  const tl::Kernel k = tl::jit("blocks_on_pool", [](tl::GlobalAddress out) {
    const tl::Value to = tl::tensor(out, {16});
    tl::store(tl::full({1}, 0, DataType::kInt64) + tl::block_num(), to, {tl::block_idx()});
  });
  ThreadPool pool(3);
  TensorStorage out = poisoned({16}, DataType::kInt64);
  k.launch_on(pool, 0, out);               // core_num 0 = the pool's threads, not the global pool's
  std::vector<double> expected(16, -1.0);  // poisoned int64: untouched blocks stay -1
  for (int b = 0; b < 3; ++b) expected[b] = 3;
  EXPECT_EQ(compare(out, expected, {0, 0}), "");
  out = poisoned({16}, DataType::kInt64);
  k.launch_on(pool, 5, out);  // an explicit count still wins
  for (int b = 0; b < 5; ++b) expected[b] = 5;
  EXPECT_EQ(compare(out, expected, {0, 0}), "");
}

TEST(TlJit, VerifierRejectsMalformedIr) {
  tl::Function f;
  f.name = "hand_built";
  const int p = f.new_value({tl::TypeKind::kScalar, f32, {}});
  f.params.push_back({tl::ParamKind::kFloat, p, "x"});
  tl::Op op;
  op.kind = tl::OpKind::kUnary;
  op.attrs = tl::UnaryAttrs{tl::UnaryOp::kExp};
  op.operands = {p + 5};  // never defined
  op.results = {f.new_value({tl::TypeKind::kScalar, f32, {}})};
  op.loc = {"kernel.py", 7, "k"};
  f.body.ops.push_back(op);
  try {
    tl::verify(f);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel.py:7"), std::string::npos) << e.what();
  }
  f.body.ops[0].operands = {p};
  EXPECT_NO_THROW(tl::verify(f));
  f.body.ops[0].attrs = tl::BinaryAttrs{tl::BinaryOp::kAdd};  // attributes of another kind
  try {
    tl::verify(f);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel.py:7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attributes"), std::string::npos) << e.what();
  }
  f.body.ops[0].attrs = tl::UnaryAttrs{tl::UnaryOp::kExp};
  f.types[f.body.ops[0].results[0]].dtype = DataType::kInt32;  // recorded type disagrees
  EXPECT_THROW(tl::verify(f), Error);
}

TEST(TlJit, LaunchArgumentsAreChecked) {
  const tl::Kernel k = scale_kernel();
  TensorStorage x({8}, f32);
  TensorStorage y = poisoned({8}, f32);
  expect_rejected([&] { k.launch(1, x, y, 8); }, y, "arguments");
  expect_rejected([&] { k.launch(1, x, 3, 8, 1.0); }, y, "argument 1", ErrorKind::kInvalidType);
  expect_rejected([&] { k.launch(1, x, y, 2.5, 1.0); }, y, "argument 2", ErrorKind::kInvalidType);
  expect_rejected([&] { k.launch(1, x, y, 8, std::string("x")); }, y, "argument 3",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { k.launch(-1, x, y, 8, 1.0); }, y, "core_num");
  const tl::Kernel cuda = scale_kernel(nullptr, tl::Options{.backend = "cuda"});
  expect_rejected([&] { cuda.launch(1, x, y, 8, 1.0); }, y, "backend", ErrorKind::kUnsupported);
}

// covers: print_ir dump_dir
TEST(TlJit, PrintIrAndDumpDir) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tileops_tl_dump_test";
  std::filesystem::remove_all(dir);
  const tl::Kernel k =
      scale_kernel(nullptr, tl::Options{.print_ir = true, .dump_dir = dir.string()});
  TensorStorage x({8}, f32), y({8}, f32);
  ::testing::internal::CaptureStderr();
  k.launch(1, x, y, 8, 1.0);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("after tracing"), std::string::npos) << err;
  EXPECT_NE(err.find("after dead-code"), std::string::npos) << err;
  EXPECT_NE(err.find("tl_jit_test.cc:"), std::string::npos) << err;  // locations
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files += e.path().extension() == ".tlir";
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

// covers: launch core_num_0
TEST(TlJit, ConcurrentLaunchesOfOneKernel) {
  const tl::Kernel k = scale_kernel();
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        const std::int64_t n = 37 + t * 11 + rep;
        TensorStorage x({n}, f32), y = poisoned({n}, f32);
        from_doubles(x, std::vector<double>(n, 1.0 + t));
        const double factor = rep % 3;  // three specialisations raced for
        k.launch(rep % 2 == 0 ? 0 : 3, x, y, n, factor);
        if (compare(y, std::vector<double>(n, (1.0 + t) * factor), {0, 0}) != "") ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(k.num_specialisations(), 3u);
}

}  // namespace
}  // namespace tileops::testing::tl_test
