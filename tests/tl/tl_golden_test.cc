// Golden kernels written as users write them (mirroring pyasc's golden set), launched from C++
// without numpy, checked against float64 references on tail shapes and several block counts.
#include "tests/support/reference_ops.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

// z = x + y over a 1-D tensor; block b handles tiles b, b + block_num, ...
tl::Kernel make_vadd() {
  return tl::jit("vadd", [](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress z,
                            tl::Int n, tl::ConstExpr<int> tile) {
    const tl::Value tx = tl::tensor(x, {n});
    const tl::Value ty = tl::tensor(y, {n});
    const tl::Value tz = tl::tensor(z, {n});
    for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, *tile), tl::block_num())) {
      const tl::Value a = tl::load(tx, {*tile}, {i * *tile});
      const tl::Value b = tl::load(ty, {*tile}, {i * *tile});
      tl::store(a + b, tz, {i * *tile});
    }
  });
}

// covers: jit GlobalAddress Int ConstExpr launch core_num_0 tensor load store add range block_idx
// block_num ceildiv cache
TEST(TlGolden, VaddEveryDtypeTailAndBlockCount) {
  const tl::Kernel vadd = make_vadd();
  std::mt19937_64 rng(1);
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32}) {
    for (std::int64_t n : {1, 100, 1000, 4099}) {
      for (int cores : core_nums()) {
        TensorStorage x = random_tensor({n}, dtype, rng), y = random_tensor({n}, dtype, rng);
        TensorStorage z = poisoned({n}, dtype);
        vadd.launch(cores, x, y, z, n, 128);
        const auto xs = to_doubles(x), ys = to_doubles(y);
        std::vector<double> expected(xs.size());
        for (std::size_t i = 0; i < xs.size(); ++i) expected[i] = xs[i] + ys[i];
        EXPECT_EQ(compare(z, expected, tol(dtype)), "")
            << name_of(dtype) << " n=" << n << " cores=" << cores;
      }
    }
  }
  EXPECT_EQ(vadd.num_specialisations(), 4u);  // one per dtype, none per size or block count
}

// y = f(x) over a 1-D tensor in tiles of `tile` lanes.
template <typename F>
tl::Kernel unary_1d(const char* name, F f) {
  return tl::jit(name, [f](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int n, tl::Float alpha,
                           tl::ConstExpr<int> tile) {
    const tl::Value tx = tl::tensor(x, {n});
    const tl::Value ty = tl::tensor(y, {n});
    for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, *tile), tl::block_num())) {
      tl::store(f(tl::load(tx, {*tile}, {i * *tile}), alpha), ty, {i * *tile});
    }
  });
}

void check_unary(const tl::Kernel& k, const std::function<double(double)>& ref,
                 std::vector<DataType> dtypes, std::vector<int> tiles, double alpha = 0.01) {
  std::mt19937_64 rng(2);
  for (DataType dtype : dtypes) {
    for (int tile : tiles) {
      for (int cores : {1, 3, 16}) {
        const std::int64_t n = 3000;
        TensorStorage x = random_tensor({n}, dtype, rng, Layout::kContiguous, -5, 5);
        TensorStorage y = poisoned({n}, dtype);
        k.launch(cores, x, y, n, alpha, tile);
        EXPECT_EQ(compare(y, map(to_doubles(x), ref), tol(dtype)), "")
            << name_of(dtype) << " tile " << tile << " cores " << cores;
      }
    }
  }
}

// covers: abs where gt mul gelu gelu_tanh erf Float
TEST(TlGolden, AbsLeakyReluGelu) {
  const auto f32 = DataType::kFloat32, f16 = DataType::kFloat16;
  check_unary(unary_1d("abs", [](const tl::Value& x, const tl::Value&) { return tl::abs(x); }),
              [](double v) { return std::fabs(v); }, {f32, f16, DataType::kBFloat16}, {128});
  check_unary(
      unary_1d("leaky_relu",
               [](const tl::Value& x, const tl::Value& a) { return tl::where(x > 0, x, x * a); }),
      [](double v) { return v > 0 ? v : v * 0.25; }, {f32, f16}, {64, 1024}, 0.25);
  const auto gelu_erf = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  const auto gelu_tanh = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  check_unary(unary_1d("gelu", [](const tl::Value& x, const tl::Value&) { return tl::gelu(x); }),
              gelu_erf, {f32, f16}, {64, 128, 1024});
  check_unary(
      unary_1d("gelu_tanh", [](const tl::Value& x, const tl::Value&) { return tl::gelu(x, true); }),
      gelu_tanh, {f32, f16}, {64, 128, 1024});
  // The erf form spelled out by hand, as pyasc's golden kernel does.
  check_unary(unary_1d("gelu_manual",
                       [](const tl::Value& x, const tl::Value&) {
                         return 0.5 * x * (1.0 + tl::erf(x * 0.7071067811865476));
                       }),
              gelu_erf, {f32}, {128});
}

// Row-wise kernels: block b takes rows b, b + block_num, ...; one row tile of `block` lanes.
// covers: reduce_sum softmax pad_value to
TEST(TlGolden, RowReduceSumAndSoftmax) {
  const tl::Kernel row_sum =
      tl::jit("row_sum", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows, tl::Int cols,
                            tl::ConstExpr<int> block) {
        const tl::Value tx = tl::tensor(x, {rows, cols});
        const tl::Value to = tl::tensor(out, {rows});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value row = tl::load(tx, {1, *block}, {r, 0});
          tl::store(tl::reduce_sum(row.to(DataType::kFloat32)).to(to.dtype()), to, {r});
        }
      });
  const tl::Kernel softmax =
      tl::jit("softmax", [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows, tl::Int cols,
                            tl::ConstExpr<int> block) {
        const tl::Value tx = tl::tensor(x, {rows, cols});
        const tl::Value to = tl::tensor(out, {rows, cols});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          tl::store(tl::softmax(tl::load(tx, {1, *block}, {r, 0}, -INFINITY)), to, {r, 0});
        }
      });
  std::mt19937_64 rng(4);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (auto [rows, cols, block] : {std::tuple{7, 1000, 1024}, {3, 64, 64}, {5, 1, 16}}) {
      for (int cores : {1, 3, 16}) {
        TensorStorage x = random_tensor({rows, cols}, dtype, rng, Layout::kContiguous, -4, 4);
        TensorStorage sum = poisoned({rows}, dtype), sm = poisoned({rows, cols}, dtype);
        row_sum.launch(cores, x, sum, rows, cols, block);
        softmax.launch(cores, x, sm, rows, cols, block);
        const auto xs = to_doubles(x);
        std::vector<double> esum(rows, 0), esm(xs.size());
        for (int r = 0; r < rows; ++r) {
          double mx = -INFINITY, z = 0;
          for (int c = 0; c < cols; ++c) esum[r] += xs[r * cols + c];
          for (int c = 0; c < cols; ++c) mx = std::max(mx, xs[r * cols + c]);
          for (int c = 0; c < cols; ++c) z += std::exp(xs[r * cols + c] - mx);
          for (int c = 0; c < cols; ++c) esm[r * cols + c] = std::exp(xs[r * cols + c] - mx) / z;
        }
        Tolerance ts = tol(dtype);
        ts.atol *= 8;  // a sum of up to 1000 rounded inputs, rounded once
        EXPECT_EQ(compare(sum, esum, ts), "") << name_of(dtype) << " " << cols << " " << cores;
        EXPECT_EQ(compare(sm, esm, tol(dtype)), "")
            << name_of(dtype) << " " << cols << " " << cores;
      }
    }
  }
}

// rms_norm for any width: one kernel, two passes over the row in tiles (no host-side padding).
// covers: Var range rsqrt div
TEST(TlGolden, RmsNormAnyWidth) {
  const tl::Kernel k =
      tl::jit("rms_norm", [](tl::GlobalAddress x, tl::GlobalAddress w, tl::GlobalAddress y,
                             tl::Int rows, tl::Int cols, tl::Float eps, tl::ConstExpr<int> tile) {
        const tl::Value tx = tl::tensor(x, {rows, cols});
        const tl::Value tw = tl::tensor(w, {cols});
        const tl::Value ty = tl::tensor(y, {rows, cols});
        const tl::Value chunks = tl::ceildiv(cols, *tile);
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          tl::Var acc = tl::zeros({1, *tile}, DataType::kFloat32);
          for (tl::Value c : tl::range(chunks)) {
            const tl::Value v = tl::load(tx, {1, *tile}, {r, c * *tile}).to(DataType::kFloat32);
            acc = acc + v * v;
          }
          const tl::Value rstd = tl::rsqrt(tl::reduce_sum(acc) / cols + eps);
          for (tl::Value c : tl::range(chunks)) {
            const tl::Value v = tl::load(tx, {1, *tile}, {r, c * *tile}).to(DataType::kFloat32);
            const tl::Value g = tl::load(tw, {*tile}, {c * *tile}).to(DataType::kFloat32);
            tl::store((v * rstd * g).to(ty.dtype()), ty, {r, c * *tile});
          }
        }
      });
  std::mt19937_64 rng(6);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (std::int64_t cols : {1, 100, 256, 1000, 4099}) {
      for (int cores : {1, 3, 16}) {
        const std::int64_t rows = 5;
        TensorStorage x = random_tensor({rows, cols}, dtype, rng),
                      w = random_tensor({cols}, dtype, rng);
        TensorStorage y = poisoned({rows, cols}, dtype);
        k.launch(cores, x, w, y, rows, cols, 1e-6, 256);
        const auto expected =
            testing::reference::rms_norm(to_doubles(x), to_doubles(w), 1e-6, cols);
        EXPECT_EQ(compare(y, expected, tol(dtype)), "") << name_of(dtype) << " " << cols;
      }
    }
  }
}

// covers: rms_norm softmax
TEST(TlGolden, BuiltinRmsNormAndSoftmaxOverWholeTiles) {
  // The built-ins normalise whole tiles: here the tile is the row (width is a ConstExpr).
  const tl::Kernel k =
      tl::jit("builtins", [](tl::GlobalAddress x, tl::GlobalAddress w, tl::GlobalAddress y,
                             tl::GlobalAddress s, tl::Int rows, tl::ConstExpr<int> width) {
        const tl::Value tx = tl::tensor(x, {rows, *width});
        const tl::Value gamma = tl::load(tl::tensor(w, {*width}), {*width}, {0});
        for (tl::Value r : tl::range(tl::block_idx() * 4, rows, tl::block_num() * 4)) {
          const tl::Value t = tl::load(tx, {4, *width}, {r, 0});
          tl::store(tl::rms_norm(t, gamma, 1e-6), tl::tensor(y, {rows, *width}), {r, 0});
          tl::store(tl::softmax(t, 0), tl::tensor(s, {rows, *width}), {r, 0});  // down columns
        }
      });
  std::mt19937_64 rng(14);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    for (int cores : {1, 3, 16}) {
      const std::int64_t rows = 8, width = 48;
      TensorStorage x = random_tensor({rows, width}, dtype, rng),
                    w = random_tensor({width}, dtype, rng);
      TensorStorage y = poisoned({rows, width}, dtype), s = poisoned({rows, width}, dtype);
      k.launch(cores, x, w, y, s, rows, width);
      const auto xs = to_doubles(x);
      EXPECT_EQ(
          compare(y, testing::reference::rms_norm(xs, to_doubles(w), 1e-6, width), tol(dtype)), "");
      std::vector<double> es(xs.size());
      for (int blk = 0; blk < rows; blk += 4) {
        for (int c = 0; c < width; ++c) {
          double mx = -INFINITY, z = 0;
          for (int r = blk; r < blk + 4; ++r) mx = std::max(mx, xs[r * width + c]);
          for (int r = blk; r < blk + 4; ++r) z += std::exp(xs[r * width + c] - mx);
          for (int r = blk; r < blk + 4; ++r)
            es[r * width + c] = std::exp(xs[r * width + c] - mx) / z;
        }
      }
      EXPECT_EQ(compare(s, es, tol(dtype)), "") << name_of(dtype) << " cores " << cores;
    }
  }
}

// covers: layer_norm concat
TEST(TlGolden, LayerNormWithMeanAndRstd) {
  const tl::Kernel k = tl::jit("layer_norm", [](tl::GlobalAddress x, tl::GlobalAddress g,
                                                tl::GlobalAddress b, tl::GlobalAddress y,
                                                tl::GlobalAddress stats, tl::Int rows,
                                                tl::ConstExpr<int> width) {
    const tl::Value tx = tl::tensor(x, {rows, *width});
    const tl::Value ty = tl::tensor(y, {rows, *width});
    const tl::Value ts = tl::tensor(stats, {rows, 2});
    const tl::Value gamma = tl::load(tl::tensor(g, {*width}), {*width}, {0});
    const tl::Value beta = tl::load(tl::tensor(b, {*width}), {*width}, {0});
    for (tl::Value r : tl::range(tl::block_idx() * 2, rows, tl::block_num() * 2)) {
      const tl::LayerNorm ln = tl::layer_norm(tl::load(tx, {2, *width}, {r, 0}), gamma, beta, 1e-5);
      tl::store(ln.out, ty, {r, 0});
      tl::store(tl::concat({ln.mean, ln.rstd}, 1), ts, {r, 0});
    }
  });
  std::mt19937_64 rng(8);
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    for (int cores : {1, 3, 16}) {
      const std::int64_t rows = 7, width = 96;
      TensorStorage x = random_tensor({rows, width}, dtype, rng),
                    g = random_tensor({width}, dtype, rng), b = random_tensor({width}, dtype, rng);
      TensorStorage y = poisoned({rows, width}, dtype),
                    stats = poisoned({rows, 2}, DataType::kFloat32);
      k.launch(cores, x, g, b, y, stats, rows, width);
      const auto xs = to_doubles(x), gs = to_doubles(g), bs = to_doubles(b);
      std::vector<double> ey, es;
      for (int r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int c = 0; c < width; ++c) mean += xs[r * width + c] / width;
        for (int c = 0; c < width; ++c)
          var += (xs[r * width + c] - mean) * (xs[r * width + c] - mean) / width;
        const double rstd = 1 / std::sqrt(var + 1e-5);
        for (int c = 0; c < width; ++c)
          ey.push_back((xs[r * width + c] - mean) * rstd * gs[c] + bs[c]);
        es.push_back(mean);
        es.push_back(rstd);
      }
      EXPECT_EQ(compare(y, ey, tol(dtype)), "") << name_of(dtype) << " cores " << cores;
      EXPECT_EQ(compare(stats, es, {1e-5, 1e-5}), "") << name_of(dtype) << " cores " << cores;
    }
  }
}

// C = A @ B (+ bias) in [16, 16] output tiles, K in steps of 8, accumulated with matmul_acc.
// covers: matmul matmul_acc matmul_bias T floordiv mod
TEST(TlGolden, TiledMatmulWithMatmulAcc) {
  const tl::Kernel k = tl::jit("matmul", [](tl::GlobalAddress a, tl::GlobalAddress bt,
                                            tl::GlobalAddress bias, tl::GlobalAddress c, tl::Int m,
                                            tl::Int n, tl::Int kk) {
    const tl::Value ta = tl::tensor(a, {m, kk});
    const tl::Value tb = tl::tensor(bt, {n, kk});  // B stored transposed: [N, K]
    const tl::Value tc = tl::tensor(c, {m, n});
    const tl::Value nt = tl::ceildiv(n, 16);
    for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(m, 16) * nt, tl::block_num())) {
      const tl::Value i = tl::floordiv(t, nt) * 16;
      const tl::Value j = (t % nt) * 16;
      tl::Var acc = tl::zeros({16, 16}, DataType::kFloat32);
      for (tl::Value p : tl::range(0, kk, 8)) {
        acc = tl::matmul_acc(acc, tl::load(ta, {16, 8}, {i, p}), tl::load(tb, {16, 8}, {j, p}).T());
      }
      const tl::Value b = tl::load(tl::tensor(bias, {n}), {16}, {j});
      tl::store(tl::matmul(tl::zeros({16, 1}, ta.dtype()), tl::zeros({1, 16}, ta.dtype()), b) + acc,
                tc, {i, j});
    }
  });
  std::mt19937_64 rng(10);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (int cores : {1, 3, 16}) {
      const std::int64_t m = 37, n = 29, kk = 19;
      TensorStorage a = random_tensor({m, kk}, dtype, rng), bt = random_tensor({n, kk}, dtype, rng);
      TensorStorage bias = random_tensor({n}, DataType::kFloat32, rng);
      TensorStorage c = poisoned({m, n}, DataType::kFloat32);
      k.launch(cores, a, bt, bias, c, m, n, kk);
      const auto as = to_doubles(a), bs = to_doubles(bt), bias_s = to_doubles(bias);
      std::vector<double> expected(m * n);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double s = bias_s[j];
          for (int p = 0; p < kk; ++p) s += as[i * kk + p] * bs[j * kk + p];
          expected[i * n + j] = s;
        }
      }
      EXPECT_EQ(compare(c, expected, {1e-5, 1e-5}), "") << name_of(dtype) << " cores " << cores;
    }
  }
}

// covers: store_scalar
TEST(TlGolden, ScalarStoreFromEveryBlock) {
  const tl::Kernel k = tl::jit("block_ids", [](tl::GlobalAddress out) {
    tl::store(tl::block_idx() + 1, tl::tensor(out, {tl::block_num()}), {tl::block_idx()});
  });
  for (int cores : {1, 2, 3, 16}) {  // pyasc drops the store of even blocks
    TensorStorage out = poisoned({cores}, DataType::kFloat32);
    k.launch(cores, out);
    std::vector<double> expected;
    for (int b = 0; b < cores; ++b) expected.push_back(b + 1);
    EXPECT_EQ(compare(out, expected, {0, 0}), "") << cores;
  }
}
}  // namespace
}  // namespace tileops::testing::tl_test
