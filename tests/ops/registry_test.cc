// The operator framework: registry listing, implementation selection errors, and the bounded,
// thread-safe LRU cache of operator instances.
#include "tileops/ops/registry.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/rms_norm.h"

namespace tileops::ops {
namespace {

TEST(Registry, ListsActiveImplementations) {
  EXPECT_EQ(active_implementation_indices("rms_norm", DeviceType::kCpu), (std::vector<int>{0, 1}));
  EXPECT_EQ(active_implementation_names("rms_norm", DeviceType::kCpu),
            (std::vector<std::string>{"native", "tl"}));
  EXPECT_TRUE(active_implementation_indices("rms_norm", DeviceType::kCuda).empty());
  EXPECT_TRUE(active_implementation_indices("no_such_op", DeviceType::kCpu).empty());
  const auto ops = registered_operators();
  EXPECT_NE(std::find(ops.begin(), ops.end(), "rms_norm"), ops.end());
}

TEST(Registry, UnknownImplementationIndexIsUnsupported) {
  std::mt19937_64 rng(1);
  auto x = testing::random_tensor({2, 8}, DataType::kFloat32, rng);
  auto w = testing::random_tensor({8}, DataType::kFloat32, rng);
  auto y = testing::poisoned({2, 8}, DataType::kFloat32);
  Context ctx;
  ctx.implementation_index = 7;
  try {
    rms_norm(x, w, 1e-6, y, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("available: {0, 1}"), std::string::npos) << e.what();
  }
}

TEST(Registry, CpuCallsTakeNoStream) {
  std::mt19937_64 rng(1);
  auto x = testing::random_tensor({2, 8}, DataType::kFloat32, rng);
  auto w = testing::random_tensor({8}, DataType::kFloat32, rng);
  auto y = testing::poisoned({2, 8}, DataType::kFloat32);
  int fake_stream = 0;
  Context ctx;
  ctx.stream = &fake_stream;
  testing::expect_rejected([&] { rms_norm(x, w, 1e-6, y, ctx); }, y, "stream");
  const RmsNorm op(x, w, 1e-6, y);
  testing::expect_rejected([&] { op(x, w, y, ctx); }, y, "stream");
}

TEST(OperatorCache, KeyedOnGeometryAndBounded) {
  clear_cache();
  EXPECT_EQ(cache_size(), 0u);
  std::mt19937_64 rng(2);
  auto w = testing::random_tensor({16}, DataType::kFloat32, rng);
  for (int rows = 1; rows <= 5; ++rows) {
    auto x = testing::random_tensor({rows, 16}, DataType::kFloat32, rng);
    auto y = testing::poisoned({rows, 16}, DataType::kFloat32);
    rms_norm(x, w, 1e-6, y);
    rms_norm(x, w, 1e-6, y);  // same geometry: a hit
  }
  EXPECT_EQ(cache_size(), 5u);
  auto x = testing::random_tensor({1, 16}, DataType::kFloat32, rng);
  auto y = testing::poisoned({1, 16}, DataType::kFloat32);
  rms_norm(x, w, 1e-3, y);  // another attribute value: a new entry
  EXPECT_EQ(cache_size(), 6u);
  set_cache_capacity(3);
  EXPECT_EQ(cache_size(), 3u);
  for (int rows = 10; rows < 20; ++rows) {
    auto xr = testing::random_tensor({rows, 16}, DataType::kFloat32, rng);
    auto yr = testing::poisoned({rows, 16}, DataType::kFloat32);
    rms_norm(xr, w, 1e-6, yr);
  }
  EXPECT_EQ(cache_size(), 3u);
  set_cache_capacity(1024);
  clear_cache();
  EXPECT_EQ(cache_size(), 0u);
}

TEST(OperatorCache, SameInstanceForSameProblem) {
  clear_cache();
  float dummy = 0.0f;
  Tensor t(&dummy, Dims{1, 1}, DataType::kFloat32);
  Tensor w(&dummy, Dims{1}, DataType::kFloat32);
  Problem p{"rms_norm", {TensorDesc::of(t), TensorDesc::of(w), TensorDesc::of(t)}, {1e-6}};
  auto a = cached_operator(p, 0);
  auto b = cached_operator(p, 0);
  EXPECT_EQ(a.get(), b.get());
  Problem q = p;
  q.attributes[0] = 1e-5;
  EXPECT_NE(cached_operator(q, 0).get(), a.get());
}

// The per-thread memo in front of the cache never serves an instance the cache has dropped.
TEST(OperatorCache, ClearAndCapacityReachTheThreadMemo) {
  clear_cache();
  float dummy = 0.0f;
  Tensor t(&dummy, Dims{1, 1}, DataType::kFloat32);
  Tensor w(&dummy, Dims{1}, DataType::kFloat32);
  Problem p{"rms_norm", {TensorDesc::of(t), TensorDesc::of(w), TensorDesc::of(t)}, {1e-6}};
  auto a = cached_operator(p, 0);
  EXPECT_EQ(cached_operator(p, 0).get(), a.get());
  clear_cache();
  auto b = cached_operator(p, 0);
  EXPECT_NE(b.get(), a.get());
  EXPECT_EQ(cache_size(), 1u);
  set_cache_capacity(1);
  Problem q = p;
  q.attributes[0] = 1e-5;
  cached_operator(q, 0);  // evicts p
  EXPECT_EQ(cache_size(), 1u);
  set_cache_capacity(1024);
  EXPECT_NE(cached_operator(p, 0).get(), b.get());
  EXPECT_EQ(cache_size(), 2u);
  clear_cache();
}

TEST(OperatorCache, ThreadSafeUnderConcurrentCallsWithEviction) {
  set_cache_capacity(4);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (int i = 0; i < 60; ++i) {
        const std::int64_t rows = 1 + (i + t) % 9;
        auto x = testing::random_tensor({rows, 24}, DataType::kFloat32, rng);
        auto w = testing::random_tensor({24}, DataType::kFloat32, rng);
        auto y = testing::poisoned({rows, 24}, DataType::kFloat32);
        rms_norm(x, w, 1e-6, y);
        const auto xs = testing::to_doubles(x.view());
        const auto ws = testing::to_doubles(w.view());
        std::vector<double> expected(xs.size());
        for (std::int64_t r = 0; r < rows; ++r) {
          double s = 0;
          for (int k = 0; k < 24; ++k) s += xs[r * 24 + k] * xs[r * 24 + k];
          const double scale = 1.0 / std::sqrt(s / 24 + 1e-6);
          for (int k = 0; k < 24; ++k) expected[r * 24 + k] = xs[r * 24 + k] * scale * ws[k];
        }
        if (!testing::compare(y.view(), expected, {1e-5, 1e-5}).empty()) wrong++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache_size(), 4u);
  set_cache_capacity(1024);
}

}  // namespace
}  // namespace tileops::ops
