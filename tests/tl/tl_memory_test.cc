// Global memory and tile creation on the interp backend: pad values and strided tensors, scalar
// stores from every block, tile_id, masks, full/zeros/arange, copy/concat, atomics, prefetch
// hints and widened 16-bit tiles used by several ops.
#include <limits>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const DataType f32 = DataType::kFloat32;

// covers: tensor_strides pad_value load
TEST(TlMemory, LoadReadsPadOutsideTheTensorAndHonoursStrides) {
  // A [5, 7] view with gaps; tiles [4, 8] at offsets that cross every edge.
  const tl::Kernel k = tl::jit("pad", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int r0,
                                         tl::Int c0, tl::Int s0, tl::Int s1) {
    const tl::Value tx = tl::tensor(x, {5, 7}, {s0, s1});
    const tl::Value to = tl::tensor(out, {4, 8});
    tl::store(tl::load(tx, {4, 8}, {r0, c0}, -7.5), to, {0, 0});
  });
  std::mt19937_64 rng(3);
  for (DataType d : {f32, DataType::kFloat16, DataType::kInt32}) {
    TensorStorage x = random_tensor({5, 7}, d, rng, Layout::kStrided);
    ASSERT_GT(x.view().stride(1), 1);
    const auto xs = to_doubles(x);
    for (auto [r0, c0] : {std::pair{-2, -3}, {3, 4}, {0, 0}, {4, 6}, {9, 0}}) {
      std::vector<double> expected;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 8; ++j) {
          const int r = r0 + i, c = c0 + j;
          const bool inside = r >= 0 && r < 5 && c >= 0 && c < 7;
          expected.push_back(inside ? xs[r * 7 + c] : (d == DataType::kInt32 ? -7 : -7.5));
        }
      }
      for (int cores : {1, 3, 16}) {  // every block stores the same tile
        TensorStorage out = poisoned({4, 8}, d);
        k.launch(cores, x, out, r0, c0, x.view().stride(0), x.view().stride(1));
        EXPECT_EQ(compare(out, expected, {0, 0}), "") << name_of(d) << " " << r0 << "," << c0;
      }
    }
  }
}

// A loaded tile keeps the values memory held at the load, even when a later store overwrites
// that memory while the tile is still used: through the same tensor, and through another tensor
// viewing the same buffer (the cpu backend reads tiles in place only when nothing overlaps).
TEST(TlMemory, LoadedTilesKeepTheirValuesAcrossOverlappingStores) {
  const tl::Kernel same = tl::jit("overwrite_same", [](tl::GlobalAddress x, tl::GlobalAddress y) {
    const tl::Value tx = tl::tensor(x, {20}), ty = tl::tensor(y, {8});
    const tl::Value a = tl::load(tx, {8}, {0});
    tl::store(a + 1, tx, {4});
    tl::store(a * 2, ty, {0});
  });
  const tl::Kernel other = tl::jit("overwrite_view", [](tl::GlobalAddress x, tl::GlobalAddress y) {
    const tl::Value tx = tl::tensor(x, {8}), ty = tl::tensor(y, {16});
    const tl::Value a = tl::load(tx, {8}, {0});
    tl::store(a + 1, ty, {0});
    tl::store(a * 2, ty, {8});
  });
  std::vector<double> x0;
  for (int i = 0; i < 20; ++i) x0.push_back(i + 0.5);
  TensorStorage x({20}, f32), y = poisoned({8}, f32);
  from_doubles(x, x0);
  same.launch(1, x, y);
  std::vector<double> ex = x0, ey;
  for (int i = 0; i < 8; ++i) {
    ex[static_cast<std::size_t>(4 + i)] = x0[static_cast<std::size_t>(i)] + 1;
    ey.push_back(x0[static_cast<std::size_t>(i)] * 2);
  }
  EXPECT_EQ(compare(x, ex, {0, 0}), "");
  EXPECT_EQ(compare(y, ey, {0, 0}), "");
  from_doubles(x, x0);  // y views x from element 4: the first store overwrites x[4..12)
  other.launch(1, x, tl::Pointer{static_cast<float*>(x.data()) + 4, f32});
  ex = x0;
  for (int i = 0; i < 8; ++i) {
    ex[static_cast<std::size_t>(4 + i)] = x0[static_cast<std::size_t>(i)] + 1;
    ex[static_cast<std::size_t>(12 + i)] = x0[static_cast<std::size_t>(i)] * 2;
  }
  EXPECT_EQ(compare(x, ex, {0, 0}), "");
}

// A prefetch only hints: the results are those of the kernel without it, whether the hinted tile
// lies in the tensor, crosses its edge or lies outside it, and whether the tensor is contiguous.
// The row softmax below walks each row with a max and a sum (the loops that advance the hints
// on the cpu backend) and stores the result.
// covers: prefetch
TEST(TlMemory, PrefetchIsOnlyAHint) {
  const auto softmax_rows = [](bool hint) {
    return tl::jit(hint ? "rows_hinted" : "rows", [hint](tl::GlobalAddress x, tl::GlobalAddress out,
                                                         tl::Int rows, tl::Int s0, tl::Int s1) {
      const tl::Value tx = tl::tensor(x, {rows, 200}, {s0, s1});
      const tl::Value to = tl::tensor(out, {rows, 200});
      for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
        if (hint) {
          tl::prefetch(tx, {1, 256}, {r + 1, 0});   // crosses the row's end
          tl::prefetch(tx, {1, 128}, {r + 1, 0});   // inside unless r is last
          tl::prefetch(tx, {2, 64}, {r - 1, -70});  // outside
        }
        const tl::Value v = tl::load(tx, {1, 256}, {r, 0}, -INFINITY);
        const tl::Value e = tl::exp(v - tl::reduce_max(v));
        tl::store(e / tl::reduce_sum(e), to, {r, 0});
      }
    });
  };
  const tl::Kernel plain = softmax_rows(false), hinted = softmax_rows(true);
  EXPECT_NE(hinted.ir_for(TensorStorage({3, 200}, f32), TensorStorage({3, 200}, f32), 3, 200, 1)
                .find("prefetch"),
            std::string::npos);
  std::mt19937_64 rng(11);
  for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
    TensorStorage x = random_tensor({7, 200}, f32, rng, layout);
    std::vector<double> softmax = to_doubles(x);
    softmax_rows_f64(softmax, 200);
    for (int cores : {1, 3}) {
      TensorStorage want = poisoned({7, 200}, f32), got = poisoned({7, 200}, f32);
      const std::int64_t s0 = x.view().stride(0), s1 = x.view().stride(1);
      plain.launch(cores, x, want, 7, s0, s1);
      hinted.launch(cores, x, got, 7, s0, s1);
      EXPECT_EQ(compare(want, softmax, {1e-7, 1e-5}), "") << cores << " blocks";
      EXPECT_EQ(compare(got, to_doubles(want), {0, 0}), "") << cores << " blocks";
    }
  }
}

// The same with a bfloat16 tile widened once and used by several ops (the cpu backend reads the
// widening where each op reads it): the ops after the overlapping store still see the old values.
TEST(TlMemory, WidenedTileUsedSeveralTimesKeepsItsValuesAcrossAStore) {
  const tl::Kernel k = tl::jit("widen_overwrite", [](tl::GlobalAddress x, tl::GlobalAddress y) {
    const tl::Value tx = tl::tensor(x, {20}), ty = tl::tensor(y, {8});
    const tl::Value g = tl::load(tx, {8}, {0}).to(f32);
    tl::store((g * 2).to(DataType::kBFloat16), tx, {4});
    tl::store((g * 3) * (g - 1) + tl::where(g < 2, g, 0.5), ty, {0});
  });
  std::vector<double> x0;
  for (int i = 0; i < 20; ++i) x0.push_back(0.25 * i - 1);  // exact in bfloat16
  TensorStorage x({20}, DataType::kBFloat16), y = poisoned({8}, f32);
  from_doubles(x, x0);
  k.launch(1, x, y);
  std::vector<double> ex = x0, ey;
  for (std::size_t i = 0; i < 8; ++i) {
    ex[4 + i] = x0[i] * 2;
    ey.push_back(x0[i] * 3 * (x0[i] - 1) + (x0[i] < 2 ? x0[i] : 0.5));
  }
  EXPECT_EQ(compare(x, ex, {0, 0}), "");
  EXPECT_EQ(compare(y, ey, {0, 0}), "");
}

// covers: store_scalar full
TEST(TlMemory, StoresWriteOnlyInBoundsAndScalarsFromEveryBlock) {
  const tl::Kernel k = tl::jit("scalar_store", [](tl::GlobalAddress out, tl::Int n) {
    const tl::Value t = tl::tensor(out, {n});
    tl::store(tl::block_idx() * 10 + tl::block_num(), t, {tl::block_idx()});
    // A 1-element tile at the same place of the second half.
    tl::store(tl::full({1}, tl::block_idx(), DataType::kInt32), t, {tl::block_idx() + 16});
  });
  for (int cores : {1, 3, 16}) {
    TensorStorage out = poisoned({40}, DataType::kInt32);
    k.launch(cores, out, 32);  // stores at 16..31 + the 1-element tiles: all in bounds
    const auto got = to_doubles(out);
    for (int b = 0; b < 40; ++b) {
      if (b < cores) {
        EXPECT_EQ(got[b], b * 10 + cores);
      } else if (b >= 16 && b < 16 + cores) {
        EXPECT_EQ(got[b], b - 16);
      } else {
        EXPECT_EQ(got[b], -1) << "element " << b << " written";  // poison of int32
      }
    }
  }
}

// covers: tile_id mask
TEST(TlMemory, TileIdMaskAndTails) {
  const tl::Kernel k =
      tl::jit("mask", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n, tl::Int count) {
        const tl::Value tx = tl::tensor(x, {n});
        const tl::Value to = tl::tensor(out, {n});
        const tl::Value tile = tl::load(tx, {16}, tl::TileId{{tl::block_idx()}});
        const tl::Mask mask(count);
        tl::store(tile * 2, to, tl::TileId{{tl::block_idx()}});
      });
  std::mt19937_64 rng(5);
  TensorStorage x = random_tensor({45}, f32, rng);
  const auto xs = to_doubles(x);
  for (auto [count, cores] : {std::pair{0, 3}, {5, 16}, {16, 3}, {7, 1}}) {
    TensorStorage out = poisoned({45}, f32);
    k.launch(cores, x, out, 45, count);
    const auto got = to_doubles(out);
    for (int i = 0; i < 45; ++i) {
      if (i % 16 < count && i / 16 < cores) {
        EXPECT_EQ(got[i], 2 * xs[i]) << i;
      } else {
        EXPECT_TRUE(std::isnan(got[i])) << "masked lane " << i << " written";
      }
    }
  }
}

// covers: full zeros full_like zeros_like arange
TEST(TlMemory, FullZerosArangeLikes) {
  const tl::Kernel k =
      tl::jit("create", [](tl::GlobalAddress out, tl::GlobalAddress idx, tl::Float v) {
        const tl::Value to = tl::tensor(out, {3, 130});
        const tl::Value a = tl::full({3, 130}, v, DataType::kFloat16);
        const tl::Value b =
            tl::zeros_like(a) + tl::full_like(a, 0.5) + tl::zeros({3, 130}, DataType::kFloat16);
        tl::store(a + b, to, {0, 0});
        tl::store(tl::arange(1030) * 2, tl::tensor(idx, {1030}), {0});
      });
  for (int cores : {1, 3, 16}) {  // every block writes the same values
    TensorStorage out = poisoned({3, 130}, DataType::kFloat16);
    TensorStorage idx = poisoned({1030}, DataType::kInt32);
    k.launch(cores, out, idx, 1.25);
    EXPECT_EQ(compare(out, std::vector<double>(390, 1.75), {0, 0}), "");
    std::vector<double> expected(1030);
    for (int i = 0; i < 1030; ++i) expected[i] = 2.0 * i;
    EXPECT_EQ(compare(idx, expected, {0, 0}), "");  // every lane of a wide tile, not just 64
  }
}

// covers: copy concat
TEST(TlMemory, CopyAndConcat) {
  const tl::Kernel k = tl::jit("copy_concat", [](tl::GlobalAddress x, tl::GlobalAddress out) {
    const tl::Value t = tl::load(tl::tensor(x, {4, 8}), {4, 8}, {0, 0});
    const tl::Value sub = tl::copy(t, {2, 3}, {1, 2});                           // [2, 3]
    const tl::Value rows = tl::concat({sub, sub * 10}, 0);                       // [4, 3]
    const tl::Value both = tl::concat({rows, tl::zeros({4, 1}, t.dtype())}, 1);  // [4, 4]
    tl::store(both, tl::tensor(out, {4, 4}), {0, 0});
  });
  std::mt19937_64 rng(9);
  for (DataType d : {f32, DataType::kBFloat16, DataType::kInt32}) {
    for (int cores : {1, 3, 16}) {
      TensorStorage x = random_tensor({4, 8}, d, rng, Layout::kContiguous, -9, 9);
      TensorStorage out = poisoned({4, 4}, d);
      k.launch(cores, x, out);
      const auto xs = to_doubles(x);
      std::vector<double> expected;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          expected.push_back(j == 3 ? 0 : xs[(1 + i % 2) * 8 + 2 + j] * (i >= 2 ? 10 : 1));
        }
      }
      EXPECT_EQ(compare(out, expected, tol(d)), "") << name_of(d) << " cores " << cores;
    }
  }
}

// covers: atomic_add atomic_max atomic_min
TEST(TlMemory, AtomicsFromEveryBlock) {
  const tl::Kernel k =
      tl::jit("atomics", [](tl::GlobalAddress sum, tl::GlobalAddress mx, tl::GlobalAddress mn) {
        const tl::Value b = tl::block_idx();
        tl::atomic_add(tl::full({5}, 1.0, f32), tl::tensor(sum, {5}), {0});
        tl::atomic_max(b.to(DataType::kInt32), tl::tensor(mx, {1}), {0});
        tl::atomic_min(tl::full({3}, b, DataType::kInt32) - 7, tl::tensor(mn, {2}), {0});  // tail
      });
  for (int cores : {1, 3, 16}) {
    TensorStorage sum({5}, f32), mx({1}, DataType::kInt32), mn({3}, DataType::kInt32);
    from_doubles(sum, std::vector<double>(5, 0.5));
    from_doubles(mx, {-100});
    from_doubles(mn, {100, 100, 42});
    k.launch(cores, sum, mx, mn);
    EXPECT_EQ(compare(sum, std::vector<double>(5, 0.5 + cores), {0, 0}), "");
    EXPECT_EQ(to_doubles(mx)[0], cores - 1);
    EXPECT_EQ(compare(mn, {-7, -7, 42}, {0, 0}), "");  // element 2 is outside the [2] view
  }
}

// covers: atomic_add
TEST(TlMemory, IntegerAtomicAddFromEveryBlockWraps) {
  const tl::Kernel k = tl::jit("int_atomics", [](tl::GlobalAddress a32, tl::GlobalAddress a64) {
    const tl::Value b = tl::block_idx();
    tl::atomic_add(tl::full({4}, b + 1, DataType::kInt32), tl::tensor(a32, {4}), {0});
    tl::atomic_add(tl::full({2}, b + 1, DataType::kInt64), tl::tensor(a64, {2}), {0});
  });
  for (int cores : {1, 5, 64}) {
    TensorStorage a32({4}, DataType::kInt32), a64({2}, DataType::kInt64);
    auto* i32 = static_cast<std::int32_t*>(a32.data());
    auto* i64 = static_cast<std::int64_t*>(a64.data());
    for (int e = 0; e < 4; ++e) i32[e] = std::numeric_limits<std::int32_t>::max() - e;
    for (int e = 0; e < 2; ++e) i64[e] = -e;
    k.launch(cores, a32, a64);
    const std::int64_t total = std::int64_t{cores} * (cores + 1) / 2;
    for (int e = 0; e < 4; ++e) {
      const auto want = static_cast<std::int32_t>(static_cast<std::uint32_t>(
          static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::max() - e) + total));
      EXPECT_EQ(i32[e], want) << "int32 element " << e << " (wraps past the maximum)";
    }
    for (int e = 0; e < 2; ++e) EXPECT_EQ(i64[e], total - e) << "int64 element " << e;
  }
}

// covers: atomic_add
TEST(TlMemory, Float32AtomicAddFromManyBlocksGivesExactTotals) {
  // Block b adds (b % 5 + 1) * (r * 37 + c + 1) / 64 to element [r, c] of a [3, 37] window at
  // [b % 2, b % 3] of a [4, 38] view (row stride 41; the window's tail columns fall outside),
  // kRounds times. Every partial sum is a multiple of 2^-6 below 2^13: exact in float32, so
  // any lost or doubled update shows as an exact mismatch.
  constexpr int kRounds = 20, kBlocks = 64;
  const tl::Kernel k = tl::jit("atomic_totals", [](tl::GlobalAddress sum, tl::Int rounds) {
    const tl::Value b = tl::block_idx();
    const tl::Value v = (tl::reshape(tl::arange(3 * 37, DataType::kInt32), {3, 37}) + 1).to(f32) *
                        ((b % 5) + 1).to(f32) * (1.0 / 64);
    const tl::Value t = tl::tensor(sum, {4, 38}, {41, 1});
    for (tl::Value i : tl::range(rounds)) {
      (void)i;
      tl::atomic_add(v, t, {b % 2, b % 3});
    }
  });
  std::vector<double> want(4 * 41, std::nan(""));
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 38; ++c) want[r * 41 + c] = 0.25;
  }
  for (int b = 0; b < kBlocks; ++b) {
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 37 && c + b % 3 < 38; ++c) {
        want[(r + b % 2) * 41 + c + b % 3] += kRounds * (b % 5 + 1) * (r * 37 + c + 1) / 64.0;
      }
    }
  }
  TensorStorage sum({4 * 41}, f32);
  from_doubles(sum, map(want, [](double w) { return std::isnan(w) ? w : 0.25; }));
  k.launch(kBlocks, sum, kRounds);
  const std::vector<double> got = to_doubles(sum);
  for (std::size_t e = 0; e < got.size(); ++e) {
    const bool same = std::isnan(want[e]) ? std::isnan(got[e]) : got[e] == want[e];
    EXPECT_TRUE(same) << "element " << e << ": got " << got[e] << ", expected " << want[e];
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
