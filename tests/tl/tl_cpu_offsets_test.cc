// Tile offsets anywhere in int64: loads read exactly the in-bounds elements (the rest are the pad
// value) and stores write exactly those, for offsets at and near -2^63, 0, the extent and 2^63 - 1,
// every dtype, contiguous and strided tensors, on the interp and the cpu backend, each checked
// against a direct expectation (and so against each other). Clipping that formed offset + extent
// or -offset overflowed there: stores landed inside, loads returned data instead of the pad.
#include <limits>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

constexpr std::int64_t kRows = 5, kCols = 7;
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::vector<std::int64_t> offsets(std::int64_t extent) {
  return {kMin, kMin + 1, kMin / 2, -1, 0, extent - 1, extent, kMax / 2 + 1, kMax};
}

// A [tile] load of src at (r0, c0) into out, a store of vals at (r0, c0) into dst and of the
// scalar 5 into dst1; src, dst and dst1 are [5, 7] tensors with strides (s0, s1).
tl::Kernel offsets_kernel(const std::string& backend) {
  return tl::jit(
      "offsets",
      [](tl::GlobalAddress src, tl::GlobalAddress vals, tl::GlobalAddress dst,
         tl::GlobalAddress dst1, tl::GlobalAddress out, tl::Int r0, tl::Int c0, tl::Int s0,
         tl::Int s1, tl::ConstExpr<std::vector<std::int64_t>> tile) {
        const std::int64_t tr = (*tile)[0], tc = (*tile)[1];
        const tl::Value ts = tl::tensor(src, {kRows, kCols}, {s0, s1});
        const tl::Value td = tl::tensor(dst, {kRows, kCols}, {s0, s1});
        const tl::Value td1 = tl::tensor(dst1, {kRows, kCols}, {s0, s1});
        tl::store(tl::load(ts, {tr, tc}, {r0, c0}, 4), tl::tensor(out, {tr, tc}), {0, 0});
        tl::store(tl::load(tl::tensor(vals, {tr, tc}), {tr, tc}, {0, 0}), td, {r0, c0});
        tl::store(5, td1, {r0, c0});
      },
      tl::Options{.backend = backend});
}

bool inside(std::int64_t offset, std::int64_t index, std::int64_t extent) {
  const __int128 g = static_cast<__int128>(offset) + index;
  return g >= 0 && g < extent;
}

// covers: load store pad_value tensor_strides
TEST(TlOffsets, ClippingIsExactForEveryInt64Offset) {
  const std::vector<DataType> dtypes = {
      DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,      DataType::kBFloat16,
      DataType::kInt8,    DataType::kUInt8,   DataType::kInt16,        DataType::kInt32,
      DataType::kInt64,   DataType::kBool,    DataType::kFloat8E4M3FN, DataType::kFloat8E5M2,
      DataType::kHiFloat8};
  const std::vector<std::vector<std::int64_t>> tiles = {{2, 3}, {3, 70}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> strides = {{kCols, 1}, {20, 2}};
  for (const std::string backend : {"interp", "cpu"}) {
    const tl::Kernel k = offsets_kernel(backend);
    for (DataType d : dtypes) {
      const bool b = d == DataType::kBool;
      const double pad = b ? 1 : 4, scalar = b ? 1 : 5;
      for (const auto& tile : tiles) {
        const std::int64_t tr = tile[0], tc = tile[1];
        std::vector<double> vals_data;
        for (std::int64_t i = 0; i < tr * tc; ++i) vals_data.push_back(b ? 1 : 1 + i % 3);
        TensorStorage vals({tr, tc}, d);
        from_doubles(vals, vals_data);
        for (auto [s0, s1] : strides) {
          const std::int64_t n = (kRows - 1) * s0 + (kCols - 1) * s1 + 1;
          std::vector<double> src_data;
          for (std::int64_t i = 0; i < n; ++i) src_data.push_back(b ? i % 2 : 1 + i % 3);
          TensorStorage src({n}, d);
          from_doubles(src, src_data);
          for (std::int64_t r0 : offsets(kRows)) {
            for (std::int64_t c0 : offsets(kCols)) {
              TensorStorage dst({n}, d), dst1({n}, d), out = poisoned({tr, tc}, d);
              from_doubles(dst, std::vector<double>(static_cast<std::size_t>(n), 0));
              from_doubles(dst1, std::vector<double>(static_cast<std::size_t>(n), 0));
              std::vector<double> want_out, want_dst(static_cast<std::size_t>(n), 0),
                  want_dst1(static_cast<std::size_t>(n), 0);
              for (std::int64_t i = 0; i < tr; ++i) {
                for (std::int64_t j = 0; j < tc; ++j) {
                  const bool in = inside(r0, i, kRows) && inside(c0, j, kCols);
                  const std::int64_t e = in ? (r0 + i) * s0 + (c0 + j) * s1 : 0;
                  want_out.push_back(in ? src_data[static_cast<std::size_t>(e)] : pad);
                  if (in) want_dst[static_cast<std::size_t>(e)] = vals_data[i * tc + j];
                }
              }
              if (inside(r0, 0, kRows) && inside(c0, 0, kCols))
                want_dst1[static_cast<std::size_t>(r0 * s0 + c0 * s1)] = scalar;
              k.launch(1, src, vals, dst, dst1, out, r0, c0, s0, s1, tile);
              const std::string where =
                  backend + " " + std::string(name_of(d)) + " tile " + std::to_string(tr) + "x" +
                  std::to_string(tc) + " strides " + std::to_string(s0) + "," + std::to_string(s1) +
                  " at " + std::to_string(r0) + "," + std::to_string(c0);
              ASSERT_EQ(compare(out, want_out, {0, 0}), "") << "load " << where;
              ASSERT_EQ(compare(dst, want_dst, {0, 0}), "") << "store " << where;
              ASSERT_EQ(compare(dst1, want_dst1, {0, 0}), "") << "scalar store " << where;
            }
          }
        }
      }
    }
  }
}

// Masked stores (any int64 count; a negative one masks every lane) and atomics at the same
// offsets, float32.
// covers: mask atomic_add
TEST(TlOffsets, MaskedStoresAndAtomicsAtExtremeOffsets) {
  const std::vector<std::int64_t> counts = {kMin, -1, 0, 5, kMax};
  for (const std::string backend : {"interp", "cpu"}) {
    const tl::Kernel k = tl::jit(
        "masked",
        [](tl::GlobalAddress dst, tl::GlobalAddress acc, tl::Int r0, tl::Int c0, tl::Int count) {
          const tl::Value td = tl::tensor(dst, {kRows, kCols});
          const tl::Value tile = tl::full({3, 70}, 2.0, DataType::kFloat32);
          {
            tl::Mask m(count);
            tl::store(tile, td, {r0, c0});
          }
          tl::atomic_add(tile, tl::tensor(acc, {kRows, kCols}), {r0, c0});
        },
        tl::Options{.backend = backend});
    for (std::int64_t r0 : offsets(kRows)) {
      for (std::int64_t c0 : offsets(kCols)) {
        for (std::int64_t count : counts) {
          TensorStorage dst({kRows, kCols}, DataType::kFloat32);
          TensorStorage acc({kRows, kCols}, DataType::kFloat32);
          from_doubles(dst, std::vector<double>(kRows * kCols, 0));
          from_doubles(acc, std::vector<double>(kRows * kCols, 1));
          std::vector<double> want_dst(kRows * kCols, 0), want_acc(kRows * kCols, 1);
          for (std::int64_t i = 0; i < 3; ++i) {
            for (std::int64_t j = 0; j < 70; ++j) {
              if (!inside(r0, i, kRows) || !inside(c0, j, kCols)) continue;
              const auto e = static_cast<std::size_t>((r0 + i) * kCols + c0 + j);
              if (i * 70 + j < count) want_dst[e] = 2;
              want_acc[e] = 3;
            }
          }
          k.launch(1, dst, acc, r0, c0, count);
          const std::string where = backend + " at " + std::to_string(r0) + "," +
                                    std::to_string(c0) + " count " + std::to_string(count);
          ASSERT_EQ(compare(dst, want_dst, {0, 0}), "") << "masked store " << where;
          ASSERT_EQ(compare(acc, want_acc, {0, 0}), "") << "atomic_add " << where;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
