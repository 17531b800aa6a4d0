// Shared by the cpu-against-interpreter agreement tests (tl_cpu_*agreement_test.cc): the two
// backends' options, a kernel applying several elementwise functions at once, and a bitwise
// comparison of results.
#pragma once

#include <cstring>
#include <vector>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {

inline const tl::Options kInterp{.backend = "interp"};
inline const tl::Options kCpu{.backend = "cpu"};

using Fn = tl::Value (*)(const tl::Value& x, const tl::Value& y);

// out[f, :] = fns[f](x, y) over n elements, tiles of 64 (so the tail is partial).
inline tl::Kernel elementwise_kernel(const std::vector<Fn>& fns, const tl::Options& options) {
  return tl::jit(
      "agree_elementwise",
      [&fns](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress out, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n}), ty = tl::tensor(y, {n});
        const tl::Value to = tl::tensor(out, {static_cast<std::int64_t>(fns.size()), n});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, 64), tl::block_num())) {
          const tl::Value a = tl::load(tx, {64}, {i * 64});
          const tl::Value b = tl::load(ty, {64}, {i * 64});
          for (std::size_t f = 0; f < fns.size(); ++f) {
            tl::store(tl::reshape(fns[f](a, b), {1, 64}), to,
                      {static_cast<std::int64_t>(f), i * 64});
          }
        }
      },
      options);
}

inline void expect_same_bytes(const TensorStorage& a, const TensorStorage& b, const char* what) {
  ASSERT_EQ(a.bytes(), b.bytes());
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  const std::size_t esize = size_of(a.view().dtype());
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < a.bytes(); i += esize) {
    if (std::memcmp(pa + i, pb + i, esize) != 0 && differing++ == 0) first = i / esize;
  }
  EXPECT_EQ(differing, 0u) << what << ": first differing element " << first;
}

}  // namespace tileops::testing::tl_test
