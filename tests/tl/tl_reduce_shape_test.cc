// Reductions, scans and shape operations on the interp backend against float64 references
// computed over explicit indices.
#include <numeric>

#include "tests/tl/tl_test_util.h"
#include "tileops/core/error.h"

namespace tileops::testing::tl_test {
namespace {

using TileFn = std::function<tl::Value(const tl::Value&)>;
const std::vector<std::int64_t> kShape = {3, 4, 5};

// k(x, out) on 1, 3 and 16 blocks: every block stores the same result, so any block count must
// give the one-block answer, which is returned.
std::vector<double> launch_on_block_counts(const tl::Kernel& k, const TensorStorage& x,
                                           const Dims& out_shape, DataType out_dtype) {
  TensorStorage first = poisoned(out_shape, out_dtype);
  k.launch(1, x, first);
  for (int cores : {3, 16}) {
    TensorStorage out = poisoned(out_shape, out_dtype);
    k.launch(cores, x, out);
    EXPECT_EQ(snapshot(out), snapshot(first)) << cores << " blocks";
  }
  return to_doubles(first);
}

// Loads x [3, 4, 5] whole, applies f and stores the result (any rank; scalars as [1]) into out.
std::vector<double> run(const TileFn& f, DataType in, DataType out_dtype, const TensorStorage& x) {
  const tl::Kernel k = tl::jit("tile_fn", [f](tl::GlobalAddress px, tl::GlobalAddress pout) {
    const tl::Value t = tl::load(tl::tensor(px, {3, 4, 5}), {3, 4, 5}, {0, 0, 0});
    const tl::Value r = f(t);
    tl::IndexList shape, zeros;
    for (std::int64_t d : r.shape()) shape.emplace_back(d);
    if (shape.empty()) shape.emplace_back(1);
    for (std::size_t i = 0; i < shape.size(); ++i) zeros.emplace_back(0);
    tl::store(r, tl::tensor(pout, shape), zeros);
  });
  (void)in;
  return launch_on_block_counts(k, x, {60}, out_dtype);
}

// run() for several functions in one kernel (a compile per kernel is most of this test's time):
// f[i]'s result in row i of out [n, 60].
std::vector<std::vector<double>> run_all(const std::vector<TileFn>& fs, DataType out_dtype,
                                         const TensorStorage& x) {
  const auto n = static_cast<std::int64_t>(fs.size());
  const tl::Kernel k = tl::jit("tile_fns", [fs, n](tl::GlobalAddress px, tl::GlobalAddress pout) {
    const tl::Value t = tl::load(tl::tensor(px, {3, 4, 5}), {3, 4, 5}, {0, 0, 0});
    for (std::int64_t i = 0; i < n; ++i) {
      tl::Value r = fs[static_cast<std::size_t>(i)](t);
      if (r.shape().empty()) r = tl::full({1}, r, r.dtype());  // a scalar
      tl::IndexList shape{n}, strides{60}, at{i};
      std::int64_t stride = 1;
      for (std::int64_t d : r.shape()) shape.emplace_back(d), at.emplace_back(0);
      for (std::size_t d = r.shape().size(); d-- > 0;) {
        strides.insert(strides.begin() + 1, stride);
        stride *= r.shape()[d];
      }
      tl::store(tl::expand_dims(r, 0), tl::tensor(pout, shape, strides), at);
    }
  });
  const std::vector<double> all = launch_on_block_counts(k, x, {n, 60}, out_dtype);
  std::vector<std::vector<double>> rows;
  for (std::int64_t i = 0; i < n; ++i)
    rows.emplace_back(all.begin() + i * 60, all.begin() + (i + 1) * 60);
  return rows;
}

// Reference reduction of x [3, 4, 5] over `dims` (all when empty).
std::vector<double> reduce_ref(const std::vector<double>& x, std::vector<int> dims,
                               tl::ReduceOp op) {
  if (dims.empty()) dims = {0, 1, 2};
  for (int& d : dims) d = d < 0 ? d + 3 : d;
  std::vector<std::int64_t> out_shape = kShape;
  for (int d : dims) out_shape[d] = 1;
  const std::size_t n_out = out_shape[0] * out_shape[1] * out_shape[2];
  std::vector<std::vector<double>> groups(n_out);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 5; ++l) {
        const std::int64_t idx[3] = {i, j, l};
        std::int64_t o = 0;
        for (int d = 0; d < 3; ++d) o = o * out_shape[d] + (out_shape[d] == 1 ? 0 : idx[d]);
        groups[o].push_back(x[(i * 4 + j) * 5 + l]);
      }
    }
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    switch (op) {
      case tl::ReduceOp::kSum:
        out.push_back(std::accumulate(g.begin(), g.end(), 0.0));
        break;
      case tl::ReduceOp::kMean:
        out.push_back(std::accumulate(g.begin(), g.end(), 0.0) / g.size());
        break;
      case tl::ReduceOp::kProd:
        out.push_back(std::accumulate(g.begin(), g.end(), 1.0, std::multiplies<>()));
        break;
      case tl::ReduceOp::kMax:
        out.push_back(*std::max_element(g.begin(), g.end()));
        break;
      case tl::ReduceOp::kMin:
        out.push_back(*std::min_element(g.begin(), g.end()));
        break;
      case tl::ReduceOp::kArgmax:
        out.push_back(std::max_element(g.begin(), g.end()) - g.begin());
        break;
      case tl::ReduceOp::kArgmin:
        out.push_back(std::min_element(g.begin(), g.end()) - g.begin());
        break;
      case tl::ReduceOp::kAll:
        out.push_back(std::all_of(g.begin(), g.end(), [](double v) { return v > 0; }));
        break;
      case tl::ReduceOp::kAny:
        out.push_back(std::any_of(g.begin(), g.end(), [](double v) { return v > 0; }));
        break;
    }
  }
  return out;
}

void expect_prefix(const std::vector<double>& got, const std::vector<double>& expected, Tolerance t,
                   const std::string& what, double poison = -1) {
  ASSERT_LE(expected.size(), got.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_LE(std::fabs(got[i] - expected[i]), t.atol + t.rtol * std::fabs(expected[i]))
        << what << " element " << i << " got " << got[i] << " expected " << expected[i];
  }
  for (std::size_t i = expected.size(); i < got.size(); ++i) {
    ASSERT_TRUE(std::isnan(got[i]) || got[i] == poison) << what << " wrote past its result";
  }
}

// covers: reduce_sum reduce_max reduce_min reduce_prod reduce_mean argmax argmin all any keep_dims
TEST(TlReduce, EveryOpOverDimsWithAndWithoutKeepDims) {
  std::mt19937_64 rng(11);
  const std::vector<std::vector<int>> dim_sets = {{}, {0}, {1}, {2}, {-1}, {0, 2}};
  for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32}) {
    TensorStorage x =
        random_tensor({3, 4, 5}, d, rng, Layout::kContiguous, d == DataType::kInt32 ? -9 : 0.5, 2);
    const auto xs = to_doubles(x);
    for (const auto& dims : dim_sets) {
      for (bool keep : {false, true}) {
        std::vector<tl::ReduceOp> ops = {tl::ReduceOp::kSum, tl::ReduceOp::kMax, tl::ReduceOp::kMin,
                                         tl::ReduceOp::kProd};
        if (d != DataType::kInt32) ops.push_back(tl::ReduceOp::kMean);  // float only
        std::vector<TileFn> fs;
        for (tl::ReduceOp op : ops) {
          fs.emplace_back([op, dims, keep](const tl::Value& t) {
            return tl::reduce(op, t, dims, keep, tl::Loc::current());
          });
        }
        const auto got = run_all(fs, d, x);
        for (std::size_t i = 0; i < ops.size(); ++i) {
          Tolerance t = tol(d);
          if (ops[i] == tl::ReduceOp::kProd) t.rtol *= 4;
          expect_prefix(got[i], reduce_ref(xs, dims, ops[i]), t,
                        std::string(tl::name_of(ops[i])) + " " + std::string(name_of(d)));
        }
      }
    }
    std::vector<TileFn> fs;  // argmax and argmin over each dim
    for (int dim : {0, 1, 2}) {
      fs.emplace_back([dim](const tl::Value& t) { return tl::argmax(t, dim); });
      fs.emplace_back([dim](const tl::Value& t) { return tl::argmin(t, dim, true); });
    }
    const auto args = run_all(fs, DataType::kInt32, x);
    for (int dim : {0, 1, 2}) {
      expect_prefix(args[2 * dim], reduce_ref(xs, {dim}, tl::ReduceOp::kArgmax), {0, 0}, "argmax");
      expect_prefix(args[2 * dim + 1], reduce_ref(xs, {dim}, tl::ReduceOp::kArgmin), {0, 0},
                    "argmin");
    }
  }
  TensorStorage x = random_tensor({3, 4, 5}, DataType::kFloat32, rng, Layout::kContiguous, -0.4, 2);
  const auto xs = to_doubles(x);
  for (const auto& dims : dim_sets) {
    expect_prefix(run([&](const tl::Value& t) { return tl::all(t > 0, dims); }, DataType::kFloat32,
                      DataType::kBool, x),
                  reduce_ref(xs, dims, tl::ReduceOp::kAll), {0, 0}, "all", 1);
    expect_prefix(run([&](const tl::Value& t) { return tl::any(t > 1.5, dims, true); },
                      DataType::kFloat32, DataType::kBool, x),
                  reduce_ref(map(xs, [](double v) { return v - 1.5; }), dims, tl::ReduceOp::kAny),
                  {0, 0}, "any", 1);
  }
}

// covers: cumsum
TEST(TlReduce, CumsumEveryAxis) {
  std::mt19937_64 rng(12);
  for (DataType d : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32}) {
    TensorStorage x = random_tensor({3, 4, 5}, d, rng, Layout::kContiguous, -5, 5);
    const auto xs = to_doubles(x);
    for (int axis : {0, 1, 2, -1}) {
      const int a = axis < 0 ? 2 : axis;
      const std::int64_t stride[3] = {20, 5, 1};
      std::vector<double> expected(60);
      for (int k = 0; k < 60; ++k) {
        const int pos = static_cast<int>((k / stride[a]) % kShape[a]);
        double s = 0;
        for (int p = 0; p <= pos; ++p) s += xs[k - (pos - p) * stride[a]];
        expected[k] = s;
      }
      expect_prefix(run([&](const tl::Value& t) { return tl::cumsum(t, axis); }, d, d, x), expected,
                    d == DataType::kBFloat16 ? Tolerance{0.1, 1.6e-2} : tol(d), "cumsum");
    }
  }
}

// The positions of `line` in tl::sort's order: stable, NaN above +inf, -0.0 == 0.0.
std::vector<std::int64_t> sorted_positions(const std::vector<double>& line, bool descending) {
  std::vector<std::int64_t> pos(line.size());
  std::iota(pos.begin(), pos.end(), 0);
  auto below = [&](std::int64_t a, std::int64_t b) {
    const double u = line[a], v = line[b];
    if (std::isnan(u) || std::isnan(v)) return !std::isnan(u) && std::isnan(v);
    return u < v;
  };
  std::stable_sort(pos.begin(), pos.end(), [&](std::int64_t a, std::int64_t b) {
    return descending ? below(b, a) : below(a, b);
  });
  return pos;
}

// covers: sort argsort topk
TEST(TlReduce, SortArgsortTopkEveryAxisStableWithTies) {
  std::mt19937_64 rng(31);
  // Few distinct values, so every line has ties; the floats also hold NaN, +-inf and +-0.
  const std::vector<double> pool = {-2, -1, -0.0, 0, 1, 2, 7.5, -7.5};
  // One kernel sorts a tile of each dtype (one compile): x_d -> vals_d rows, idx rows 6d...
  const std::vector<DataType> dtypes = {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32,
                                        DataType::kInt64, DataType::kFloat64};
  std::vector<std::vector<double>> inputs;
  std::vector<TensorStorage> xs_d, vals_d;
  for (DataType d : dtypes) {
    std::vector<double> xs(60);
    for (double& v : xs) v = pool[rng() % pool.size()];
    if (is_floating(d)) {
      for (int k : {3, 17, 41}) xs[k] = std::nan("");
      xs[8] = INFINITY, xs[29] = -INFINITY, xs[50] = INFINITY;
    } else {
      for (double& v : xs) v = std::trunc(v);
      xs[5] = 2147483647 - 1, xs[33] = -2147483647;  // keys far apart (every radix digit)
    }
    xs_d.emplace_back(Dims{3, 4, 5}, d);
    from_doubles(xs_d.back(), xs);
    vals_d.push_back(poisoned({6, 60}, d));
    inputs.push_back(xs);
  }
  auto sort_one = [](const tl::Value& px, const tl::Value& pv, const tl::Value& pi, int d) {
    const tl::Value t = tl::load(tl::tensor(px, {3, 4, 5}), {3, 4, 5}, {0, 0, 0});
    const tl::Value vals = tl::tensor(pv, {6, 60}), idx = tl::tensor(pi, {30, 60});
    for (int axis = 0; axis < 3; ++axis) {
      auto row = [&](const tl::Value& v, const tl::Value& out, int r) {
        tl::store(tl::reshape(tl::ravel(v), {std::int64_t{1}, v.size()}), out, {r, 0});
      };
      row(tl::sort(t, axis), vals, 2 * axis);
      row(tl::argsort(t, axis - 3, /*descending=*/true), idx, 6 * d + 2 * axis);
      const auto [top, at] = tl::topk(t, 2, axis, /*largest=*/axis != 1);
      row(top, vals, 2 * axis + 1);
      row(at, idx, 6 * d + 2 * axis + 1);
    }
  };
  const tl::Kernel k =
      tl::jit("sorts", [sort_one](tl::GlobalAddress x0, tl::GlobalAddress x1, tl::GlobalAddress x2,
                                  tl::GlobalAddress x3, tl::GlobalAddress x4, tl::GlobalAddress v0,
                                  tl::GlobalAddress v1, tl::GlobalAddress v2, tl::GlobalAddress v3,
                                  tl::GlobalAddress v4, tl::GlobalAddress idx) {
        const tl::Value x[] = {x0, x1, x2, x3, x4}, v[] = {v0, v1, v2, v3, v4};
        for (int d = 0; d < 5; ++d) sort_one(x[d], v[d], idx, d);
      });
  TensorStorage idx = poisoned({30, 60}, DataType::kInt32);
  k.launch(3, xs_d[0], xs_d[1], xs_d[2], xs_d[3], xs_d[4], vals_d[0], vals_d[1], vals_d[2],
           vals_d[3], vals_d[4], idx);
  const auto all_i = to_doubles(idx);
  for (std::size_t di = 0; di < dtypes.size(); ++di) {
    const DataType d = dtypes[di];
    const std::vector<double>& xs = inputs[di];
    const auto gv = to_doubles(vals_d[di]);
    const std::vector<double> gi(all_i.begin() + 360 * static_cast<std::ptrdiff_t>(di),
                                 all_i.begin() + 360 * static_cast<std::ptrdiff_t>(di + 1));
    const std::int64_t stride[3] = {20, 5, 1};
    for (int a = 0; a < 3; ++a) {
      const std::int64_t n = kShape[a], s = stride[a];
      std::vector<double> want_v(60), want_i(60), want_tv, want_ti;
      want_tv.assign(60 / n * 2, 0), want_ti.assign(60 / n * 2, 0);
      // Lines in row-major order of the other axes: element e = base + j * s.
      for (std::int64_t base = 0; base < 60; ++base) {
        if ((base / s) % n != 0) continue;
        const std::int64_t outer = base / (s * n), inner = base % s;
        std::vector<double> line(n);
        for (std::int64_t j = 0; j < n; ++j) line[j] = xs[base + j * s];
        const auto up = sorted_positions(line, false), down = sorted_positions(line, true);
        const auto top = a != 1 ? down : up;
        for (std::int64_t j = 0; j < n; ++j) {
          want_v[base + j * s] = line[up[j]];
          want_i[base + j * s] = static_cast<double>(down[j]);
        }
        for (std::int64_t j = 0; j < 2; ++j) {
          const std::int64_t e = (outer * 2 + j) * s + inner;
          want_tv[e] = line[top[j]];
          want_ti[e] = static_cast<double>(top[j]);
        }
      }
      auto expect_row = [&](const std::vector<double>& got, int r, const std::vector<double>& want,
                            const char* what) {
        for (std::size_t e = 0; e < 60; ++e) {
          const double g = got[r * 60 + e];
          if (e >= want.size()) {
            EXPECT_TRUE(std::isnan(g) || g == -1) << what << " axis " << a << " wrote " << e;
            continue;
          }
          const bool same = (std::isnan(g) && std::isnan(want[e])) || g == want[e];
          EXPECT_TRUE(same) << what << " axis " << a << " dtype " << name_of(d) << " element " << e
                            << ": got " << g << ", expected " << want[e];
        }
      };
      expect_row(gv, 2 * a, want_v, "sort");
      expect_row(gi, 2 * a, want_i, "argsort descending");
      expect_row(gv, 2 * a + 1, want_tv, "topk values");
      expect_row(gi, 2 * a + 1, want_ti, "topk indices");
    }
  }
}

// covers: sort
TEST(TlReduce, SortRefusesBadArguments) {
  auto trace = [](const std::function<void(const tl::Value&)>& f) {
    const tl::Kernel k = tl::jit("bad_sort", [f](tl::GlobalAddress px) {
      f(tl::load(tl::tensor(px, {4, 8}), {4, 8}, {0, 0}));
    });
    TensorStorage x({4, 8}, DataType::kFloat32);
    k.launch(1, x);
  };
  auto expect_error = [&](const std::function<void(const tl::Value&)>& f, const char* text) {
    try {
      trace(f);
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error([](const tl::Value& t) { (void)tl::sort(t, 2); }, "axis 2 out of range");
  expect_error([](const tl::Value& t) { (void)tl::topk(t, 9); }, "k must be in [1, 8]");
  expect_error([](const tl::Value& t) { (void)tl::topk(t, 0, 0); }, "k must be in [1, 4]");
  expect_error([](const tl::Value& t) { (void)tl::sort(t > 0.0); }, "needs a number dtype");
}

// covers: reshape ravel expand_dims squeeze broadcast_to transpose T broadcasting
TEST(TlShape, ReshapeRavelExpandSqueezeBroadcastTranspose) {
  std::mt19937_64 rng(13);
  TensorStorage x = random_tensor({3, 4, 5}, DataType::kFloat32, rng);
  const auto xs = to_doubles(x);
  const Tolerance exact{0, 0};
  expect_prefix(run(
                    [](const tl::Value& t) {
                      return tl::reshape(t, {12, 5});
                    },
                    DataType::kFloat32, DataType::kFloat32, x),
                xs, exact, "reshape");
  expect_prefix(run([](const tl::Value& t) { return tl::ravel(t); }, DataType::kFloat32,
                    DataType::kFloat32, x),
                xs, exact, "ravel");
  expect_prefix(run([](const tl::Value& t) { return tl::squeeze(tl::expand_dims(t, 1), 1); },
                    DataType::kFloat32, DataType::kFloat32, x),
                xs, exact, "expand/squeeze");
  // transpose [2, 0, 1]: out[l, i, j] = x[i, j, l].
  std::vector<double> tr;
  for (int l = 0; l < 5; ++l)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) tr.push_back(xs[(i * 4 + j) * 5 + l]);
  expect_prefix(run(
                    [](const tl::Value& t) {
                      return tl::transpose(t, {2, 0, 1});
                    },
                    DataType::kFloat32, DataType::kFloat32, x),
                tr, exact, "transpose");
  // .T of a 2-D slice: x[0]^T, [5, 4].
  std::vector<double> t2;
  for (int l = 0; l < 5; ++l)
    for (int j = 0; j < 4; ++j) t2.push_back(xs[j * 5 + l]);
  expect_prefix(run(
                    [](const tl::Value& t) {
                      return tl::reshape(tl::copy(t, {1, 4, 5}, {0, 0, 0}), {4, 5}).T();
                    },
                    DataType::kFloat32, DataType::kFloat32, x),
                t2, exact, ".T");
  // broadcast_to: the first row [1, 1, 5] to [2, 4, 5]; a scalar to [2, 3].
  std::vector<double> bc;
  for (int r = 0; r < 8; ++r)
    for (int l = 0; l < 5; ++l) bc.push_back(xs[l]);
  expect_prefix(run(
                    [](const tl::Value& t) {
                      return tl::broadcast_to(tl::copy(t, {1, 1, 5}, {0, 0, 0}), {2, 4, 5});
                    },
                    DataType::kFloat32, DataType::kFloat32, x),
                bc, exact, "broadcast_to");
  expect_prefix(run(
                    [](const tl::Value& t) {
                      return tl::broadcast_to(tl::reduce_max(t), {2, 3});
                    },
                    DataType::kFloat32, DataType::kFloat32, x),
                std::vector<double>(6, *std::max_element(xs.begin(), xs.end())), exact,
                "broadcast scalar");
  // NumPy broadcasting between tiles: [3, 4, 1] - [1, 1, 5] row/column means.
  std::vector<double> nb;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 5; ++l) nb.push_back(xs[(i * 4 + j) * 5 + l] * 2 - xs[l]);
  expect_prefix(run(
                    [](const tl::Value& t) {
                      return t * 2 - tl::copy(t, {1, 1, 5}, {0, 0, 0});
                    },
                    DataType::kFloat32, DataType::kFloat32, x),
                nb, tol(DataType::kFloat32), "broadcast binary");
}

}  // namespace
}  // namespace tileops::testing::tl_test
