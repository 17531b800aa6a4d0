// The cpu backend against the interpreter (or float64) on the same inputs, memory: streaming
// stores, tl::prefetch hints, tiles read in place and bitcasts of 16-bit tiles kept in their
// memory type. What the generator plans for these kernels (which tiles are read in place, the
// work each hint is spread over) is checked in tl_cpu_plan_test.cc; here, their results.
#include <cstdlib>
#include <cstring>
#include <optional>

#include "tests/support/scoped_env.h"
#include "tests/tl/tl_cpu_agreement.h"

namespace tileops::testing::tl_test {
namespace {

// Stores of a kernel whose tensors exceed the last-level cache (here a threshold of 4 MiB, set
// through $TILEOPS_TL_STREAM_BYTES) are streaming stores, which also prefetch the next tile of
// each loop-carried load: the values are the plain loop's, tail included (2 blocks, tiles of
// 2048 strided over them). The generated source shows the threshold it was made with (the
// choice itself is made at run time: 8 MiB of tensors against it).
TEST(TlCpuAgreement, StreamedStoresWithPrefetchAreExact) {
  const std::int64_t n = (std::int64_t{1} << 20) + 37;  // 8 MiB in all
  std::optional<ScopedEnv> stream(std::in_place, "TILEOPS_TL_STREAM_BYTES", "4194304");
  const std::string dump = fresh_dump_dir("tl_streamed_dump");
  const tl::Kernel k = tl::jit(
      "streamed",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int len) {
        const tl::Value tx = tl::tensor(x, {len}), ty = tl::tensor(y, {len});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(len, 2048), tl::block_num())) {
          tl::store(tl::load(tx, {2048}, {i * 2048}) * 2 + 1, ty, {i * 2048});
        }
      },
      tl::Options{.backend = "cpu", .dump_dir = dump});
  TensorStorage x({n}, DataType::kFloat32), y({n}, DataType::kFloat32);
  auto* px = static_cast<float*>(x.data());
  for (std::int64_t i = 0; i < n; ++i) px[i] = static_cast<float>(i % 1000) * 0.25f - 100;
  std::memset(y.data(), 0xFF, y.bytes());  // NaN
  k.launch(2, x, y, n);
  stream.reset();
  const auto* py = static_cast<const float*>(y.data());
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) bad += py[i] != px[i] * 2 + 1;  // exact: x * 2 is
  EXPECT_EQ(bad, 0);
  const std::string source = dumped_source(dump);
  EXPECT_NE(source.find("#define TL_STREAM_BYTES 4194304ll"), std::string::npos)
      << "the kernel was not generated with the test's streaming threshold";
}

// The same for float16 and bfloat16 stores: narrowed 64 lanes at a time (bfloat16 in registers,
// float16 through a buffer; float32 subnormals take the exact scalar conversion), then streamed
// from a 64-byte boundary on (a row starting 3 elements in has a scalar head), a scalar tail. Bit
// for bit as the interpreter.
TEST(TlCpuAgreement, Streamed16BitStoresAreExact) {
  const std::int64_t n = 300000 + 37;  // 1.8 MiB in all, over the 1 MiB threshold below
  const ScopedEnv stream("TILEOPS_TL_STREAM_BYTES", "1048576");
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "streamed16",
        [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int len) {
          const tl::Value tx = tl::tensor(x, {len}), ty = tl::tensor(y, {len + 3});
          for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(len, 2048), tl::block_num())) {
            tl::store((tl::load(tx, {2048}, {i * 2048}) * 3).to(y.dtype()), ty, {i * 2048 + 3});
          }
        },
        o);
  };
  std::mt19937_64 rng(23);
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    const std::string dump = fresh_dump_dir("tl_streamed16_dump");
    TensorStorage x = random_tensor({n}, DataType::kFloat32, rng, Layout::kContiguous, -100, 100);
    auto* px = static_cast<float*>(x.data());
    px[5000] = 1e-39f;  // float32 subnormals: AVX512-BF16's conversion would flush them
    px[5001] = -2e-40f;
    TensorStorage e = poisoned({n + 3}, dtype), a = poisoned({n + 3}, dtype);
    make(kInterp).launch(2, x, e, n);
    make(tl::Options{.backend = "cpu", .dump_dir = dump}).launch(2, x, a, n);
    expect_same_bytes(e, a, name_of(dtype).data());
    const char* streamed =
        dtype == DataType::kBFloat16 ? "tl_f2bf64_stream(tl_out" : "tl_stream64_16(tl_out";
    EXPECT_NE(dumped_source(dump).find(streamed), std::string::npos)
        << name_of(dtype) << ": the store was not generated on the streaming path";
  }
}

// A tl::prefetch hint, spread over the max, exp-and-sum and store loops of a 4096-float softmax row
// (tl_cpu_plan_test.cc checks the spread), leaves the results as they are (against float64).
TEST(TlCpuAgreement, PrefetchHintIsSpreadOverTheLoopsThatFollow) {
  const tl::Kernel k = tl::jit(
      "hinted_rows",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int rows) {
        const tl::Value tx = tl::tensor(x, {rows, 4096}), ty = tl::tensor(y, {rows, 4096});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, 4096}, {r, 0});
          tl::prefetch(tx, {1, 4096}, {r + tl::block_num(), 0});
          tl::store(tl::softmax(v), ty, {r, 0});
        }
      },
      kCpu);
  std::mt19937_64 rng(5);
  TensorStorage x = random_tensor({3, 4096}, DataType::kFloat32, rng, Layout::kContiguous);
  TensorStorage y = poisoned({3, 4096}, DataType::kFloat32);
  k.launch(2, x, y, 3);
  std::vector<double> want = to_doubles(x);
  softmax_rows_f64(want, 4096);
  EXPECT_EQ(compare(y, want, {1e-7, 1e-5}), "");
}

// A hint before an if (spread over the larger branch's loops: tl_cpu_plan_test.cc): both branches
// scale exactly (by 2 and 1/2).
TEST(TlCpuAgreement, PrefetchHintBeforeAnIfCountsOneBranch) {
  const tl::Kernel k = tl::jit(
      "hinted_branches",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int rows, tl::Bool twice) {
        const tl::Value tx = tl::tensor(x, {rows, 4096}), ty = tl::tensor(y, {rows, 4096});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, 4096}, {r, 0});
          tl::prefetch(tx, {1, 4096}, {r + tl::block_num(), 0});
          tl::if_(
              twice,
              [&] {
                tl::store(v * 2.0f, ty, {r, 0});
              },
              [&] {
                tl::store(v * 0.5f, ty, {r, 0});
              });
        }
      },
      kCpu);
  std::mt19937_64 rng(6);
  TensorStorage x = random_tensor({3, 4096}, DataType::kFloat32, rng, Layout::kContiguous);
  const std::vector<double> xs = to_doubles(x);
  for (const bool twice : {true, false}) {
    TensorStorage y = poisoned({3, 4096}, DataType::kFloat32);
    k.launch(2, x, y, 3, twice);
    std::vector<double> want = xs;
    for (double& v : want) v *= twice ? 2 : 0.5;
    EXPECT_EQ(compare(y, want, {0, 0}), "") << twice;
  }
}

// A tile stored back to where it was loaded from, computed elementwise (and through a row sum),
// is read in place; one stored one column further on overlaps its own source at another offset
// and must be copied first (tl_cpu_plan_test.cc checks which is read in place). Both against the
// interpreter, bit for bit (float32 products and sums of two terms).
TEST(TlCpuAgreement, InPlaceUpdatesReadTheirTileInPlace) {
  constexpr std::int64_t kRows = 5, kWidth = 1000;
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "in_place",
        [](tl::GlobalAddress x, tl::GlobalAddress y) {
          const tl::Value tx = tl::tensor(x, {kRows, kWidth}), ty = tl::tensor(y, {kRows, kWidth});
          for (tl::Value r : tl::range(tl::block_idx(), kRows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, kWidth}, {r, 0});
            tl::store(v * 3.0f + tl::reduce_max(v), tx, {r, 0});
            const tl::Value w = tl::load(ty, {1, kWidth - 1}, {r, 0});
            tl::store(w * 2.0f, ty, {r, 1});
          }
        },
        o);
  };
  std::mt19937_64 rng(29);
  const TensorStorage x =
      random_tensor({kRows, kWidth}, DataType::kFloat32, rng, Layout::kContiguous);
  const TensorStorage y =
      random_tensor({kRows, kWidth}, DataType::kFloat32, rng, Layout::kContiguous);
  const auto copy = [](const TensorStorage& t) {
    TensorStorage c(t.view().shape(), t.view().dtype());
    std::memcpy(c.data(), t.data(), t.bytes());
    return c;
  };
  TensorStorage xi = copy(x), yi = copy(y), xc = copy(x), yc = copy(y);
  make(kInterp).launch(2, xi, yi);
  make(kCpu).launch(2, xc, yc);
  expect_same_bytes(xi, xc, "in place");
  expect_same_bytes(yi, yc, "shifted");
}

// A bitcast of a loaded bfloat16 or float16 tile to int16 reads its bits: every one of the 65536
// patterns as the interpreter gives it (NaNs as the float conversions return them: quieted, or
// float16's canonical NaN), also through a row max of the bits fused into the bitcast.
TEST(TlCpuAgreement, BitcastOfLoaded16BitFloats) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_bits16",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::GlobalAddress maxima) {
          const tl::Value tx = tl::tensor(x, {1024, 64}), to = tl::tensor(out, {1024, 64});
          const tl::Value tm = tl::tensor(maxima, {1024, 1});
          for (tl::Value r : tl::range(tl::block_idx(), 1024, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, 64}, {r, 0});
            tl::store(v.bitcast(DataType::kInt16), to, {r, 0});
            tl::store(
                tl::reduce_max(tl::load(tx, {1, 64}, {r, 0}).bitcast(DataType::kInt16), {1}, true),
                tm, {r, 0});
          }
        },
        o);
  };
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    TensorStorage x({1024, 64}, dtype);
    auto* bits = static_cast<std::uint16_t*>(x.data());
    for (std::uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<std::uint16_t>(i);
    TensorStorage e = poisoned({1024, 64}, DataType::kInt16),
                  a = poisoned({1024, 64}, DataType::kInt16);
    TensorStorage em = poisoned({1024, 1}, DataType::kInt16),
                  am = poisoned({1024, 1}, DataType::kInt16);
    make(kInterp).launch(4, x, e, em);
    make(kCpu).launch(4, x, a, am);
    expect_same_bytes(e, a, name_of(dtype).data());
    expect_same_bytes(em, am, name_of(dtype).data());
    const std::uint16_t inf = dtype == DataType::kBFloat16 ? 0x7f80 : 0x7c00;
    const auto* got = static_cast<const std::uint16_t*>(a.data());
    for (std::uint32_t i = 0; i < 65536; ++i) {
      if ((i & 0x7fff) > inf) continue;  // NaNs: checked against the interpreter above
      ASSERT_EQ(got[i], i) << name_of(dtype) << " bits " << i;
    }
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
