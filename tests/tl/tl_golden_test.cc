// Golden kernels written as users write them (mirroring pyasc's golden set), launched from C++
// without numpy, checked against float64 references on tail shapes and several block counts.
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

// z = x + y over a 1-D tensor; block b handles tiles b, b + block_num, ...
tl::Kernel make_vadd() {
  return tl::jit("vadd", [](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress z, tl::Int n,
                            tl::ConstExpr<int> tile) {
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

TEST(TlGolden, VaddEveryDtypeTailAndBlockCount) {
  const tl::Kernel vadd = make_vadd();
  std::mt19937_64 rng(1);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                         DataType::kInt32}) {
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

}  // namespace
}  // namespace tileops::testing::tl_test
