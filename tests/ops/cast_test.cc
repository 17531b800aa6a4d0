// cast: every one of the 13 x 13 dtype pairs on data covering each source's range (random bit
// patterns, every target's overflow point and its neighbours, midpoints of the narrow float
// formats and one step either side, integer limits, negatives to unsigned, NaN/Inf), against a
// reference built element by element with core/scalar.h (separate code from the kernel's), and
// float32 -> float16/bfloat16 also against float16.h. Tails, strided inputs and outputs,
// poisoned outputs whose gaps must stay untouched, threads, transposes, broadcasts, in place,
// the class form and bad inputs.
#include "tileops/ops/cast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/core/scalar.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops {

// Readable parameters in test output.
void PrintTo(DataType dtype, std::ostream* os) { *os << name_of(dtype); }

namespace ops {
namespace {

using testing::expect_rejected;

using testing::Layout;

constexpr DataType kAll[] = {DataType::kBool,    DataType::kInt8,         DataType::kInt16,
                             DataType::kInt32,   DataType::kInt64,        DataType::kUInt8,
                             DataType::kFloat16, DataType::kBFloat16,     DataType::kFloat32,
                             DataType::kFloat64, DataType::kFloat8E4M3FN, DataType::kFloat8E5M2,
                             DataType::kHiFloat8};

constexpr double kInf = std::numeric_limits<double>::infinity();

// Calls fn(element pointer) for every element of t in row-major order.
template <typename Fn>
void for_each_element(const Tensor& t, Fn&& fn) {
  if (t.numel() == 0) return;
  std::vector<std::int64_t> index(static_cast<std::size_t>(t.rank()), 0);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    fn(static_cast<char*>(t.element_ptr(index.data())));
    for (int d = t.rank() - 1; d >= 0; --d) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
}

// Midpoints between neighbouring values of a narrow float format (every `step`-th pattern),
// with one double and one float step either side: the inputs where a double rounding or a
// wrong tie rule shows.
void add_midpoints(DataType dtype, int step, std::vector<double>& out) {
  std::set<double> values;
  const std::uint32_t count = size_of(dtype) == 1 ? 256 : 65536;
  for (std::uint32_t p = 0; p < count; p += static_cast<std::uint32_t>(step)) {
    const double v = read_as_double(&p, dtype);  // little-endian: low bytes hold the element
    if (std::isfinite(v)) values.insert(v);
  }
  for (auto it = values.begin(); std::next(it) != values.end(); ++it) {
    const double mid = *it + (*std::next(it) - *it) / 2;
    const auto f = static_cast<float>(mid);
    for (double x : {mid, std::nextafter(mid, -kInf), std::nextafter(mid, kInf),
                     static_cast<double>(std::nextafter(f, -INFINITY)),
                     static_cast<double>(std::nextafter(f, INFINITY))}) {
      out.push_back(x);
    }
  }
}

const std::vector<double>& special_values() {
  static const std::vector<double> values = [] {
    std::vector<double> v = {0.0,
                             -0.0,
                             0.5,
                             -0.5,
                             1.5,
                             2.5,
                             -2.5,
                             127.0,
                             127.5,
                             128.0,
                             -128.0,
                             -128.5,
                             -129.0,
                             255.0,
                             255.5,
                             256.0,
                             -1.0,
                             32767.0,
                             32768.0,
                             -32768.5,
                             -32769.0,
                             2147483647.0,
                             2147483648.0,
                             -2147483648.0,
                             -2147483649.0,
                             9.2e18,
                             0x1p63,
                             -0x1p63,
                             -1e19,
                             448.0,
                             464.0,
                             465.0,
                             480.0,
                             57344.0,
                             61439.0,
                             61440.0,
                             65504.0,
                             65519.99,
                             65520.0,
                             32768.0,
                             40959.0,
                             40960.0,
                             49152.0,
                             3.4e38,
                             0x1.fffffffp127,
                             1e39,
                             -1e39,
                             kInf,
                             -kInf,
                             std::numeric_limits<double>::quiet_NaN(),
                             1e-10,
                             0x1p-23,
                             0x1p-24,
                             6e-8,
                             1e-40,
                             1e-300,
                             16777217.0,
                             16777219.0};
    for (DataType d : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2, DataType::kHiFloat8}) {
      add_midpoints(d, 1, v);
    }
    add_midpoints(DataType::kFloat16, 61, v);
    add_midpoints(DataType::kBFloat16, 67, v);
    return v;
  }();
  return values;
}

// Integers whose conversion to the float formats needs exactly one rounding.
constexpr std::int64_t kSpecialInts[] = {
    (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1,  // bfloat16 tie + 1
    (std::int64_t{1} << 60) + (std::int64_t{1} << 36) + 1,  // float32 tie + 1
    (std::int64_t{1} << 53) + 1,
    16777217,
    16777219,
    65520,
    65519,
    40960,
    40959,
    std::numeric_limits<std::int64_t>::max(),
    std::numeric_limits<std::int64_t>::min()};

// Source data: the special values first (so wide tensors hold all of them), then random bit
// patterns and uniform values in [-300, 300) with exact halves. Bools hold 0 and 1.
TensorStorage source(const Dims& shape, DataType dtype, Layout layout, std::mt19937_64& rng) {
  TensorStorage s = testing::poisoned(shape, dtype, layout);
  std::uniform_int_distribution<std::uint64_t> bits;
  std::uniform_int_distribution<int> halves(-600, 599);
  const auto& specials = special_values();
  const bool integral = is_integral(dtype);
  std::size_t k = 0;
  for_each_element(s.view(), [&](char* p) {
    const std::size_t i = k++;
    if (dtype == DataType::kBool) {
      *p = static_cast<char>(bits(rng) & 1);
    } else if (integral && i < std::size(kSpecialInts)) {
      write_from_int64(kSpecialInts[i], p, dtype);
    } else if (i < specials.size()) {
      write_from_double(specials[i], p, dtype);
    } else if (i % 2 == 0) {
      const std::uint64_t b = bits(rng);
      std::memcpy(p, &b, size_of(dtype));
    } else {
      write_from_double(halves(rng) / 2.0, p, dtype);
    }
  });
  return s;
}

// The reference conversion of one element, through scalar.h.
void reference_element(const char* src, DataType from, char* dst, DataType to) {
  if (from == to) {
    std::memcpy(dst, src, size_of(to));
  } else if (from == DataType::kBool || is_integral(from)) {
    write_from_int64(read_as_int64(src, from), dst, to);
  } else {
    write_from_double(read_as_double(src, from), dst, to);
  }
}

// Equal values (NaN matches NaN, zeros match in sign) for floats, equal bytes otherwise.
bool same_element(const char* a, const char* b, DataType dtype) {
  if (!is_floating(dtype)) return std::memcmp(a, b, size_of(dtype)) == 0;
  const double x = read_as_double(a, dtype);
  const double y = read_as_double(b, dtype);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

// Checks out == reference(input) element by element, and that no byte of `storage` (out's
// allocation, poisoned with 0xFF) outside out's elements changed.
void expect_cast(const Tensor& input, const Tensor& out, const TensorStorage& storage) {
  const DataType from = input.dtype();
  const DataType to = out.dtype();
  std::vector<const char*> in_elements;
  for_each_element(input, [&](char* p) { in_elements.push_back(p); });
  std::vector<bool> is_element(storage.bytes(), false);
  std::size_t k = 0;
  int failures = 0;
  for_each_element(out, [&](char* p) {
    const char* s = in_elements[k++];
    const auto offset = static_cast<std::size_t>(p - static_cast<char*>(storage.data()));
    std::fill_n(is_element.begin() + offset, size_of(to), true);
    char expected[8];
    reference_element(s, from, expected, to);
    bool ok = same_element(p, expected, to);
    if (from == DataType::kFloat32 && (to == DataType::kFloat16 || to == DataType::kBFloat16)) {
      float x;
      std::memcpy(&x, s, sizeof(float));
      const std::uint16_t h = to == DataType::kFloat16 ? float_to_float16(x) : float_to_bfloat16(x);
      ok = ok && same_element(p, reinterpret_cast<const char*>(&h), to);
    }
    if (!ok && ++failures <= 3) {
      ADD_FAILURE() << "element " << k - 1 << ": input " << read_as_double(s, from) << " -> got "
                    << read_as_double(p, to) << ", expected " << read_as_double(expected, to);
    }
  });
  EXPECT_EQ(failures, 0);
  const auto bytes = testing::snapshot(storage);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (!is_element[i]) {
      ASSERT_EQ(bytes[i], 0xFF) << "byte " << i << " outside the elements";
    }
  }
}

void expect_cast(const TensorStorage& input, const TensorStorage& out) {
  expect_cast(input.view(), out.view(), out);
}

using Pair = std::tuple<DataType, DataType>;

class CastPairTest : public ::testing::TestWithParam<Pair> {};

TEST_P(CastPairTest, MatchesScalarReference) {
  const auto [from, to] = GetParam();
  std::mt19937_64 rng(static_cast<std::uint64_t>(from) * 31 + static_cast<std::uint64_t>(to));
  for (std::int64_t width : {1, 7, 33, 4097}) {
    for (Layout in_layout : {Layout::kContiguous, Layout::kStrided}) {
      for (Layout out_layout : {Layout::kContiguous, Layout::kStrided}) {
        if (width == 4097 && in_layout != out_layout) continue;  // keeps the binary fast
        SCOPED_TRACE("width " + std::to_string(width) + ", input " + layout_name(in_layout) +
                     ", out " + layout_name(out_layout));
        const Dims shape{2, 3, width};
        const TensorStorage input = source(shape, from, in_layout, rng);
        const TensorStorage out = testing::poisoned(shape, to, out_layout);
        cast(input, out);
        expect_cast(input, out);
      }
    }
  }
}

std::string pair_name(const ::testing::TestParamInfo<Pair>& info) {
  return std::string(name_of(std::get<0>(info.param))) + "_to_" +
         std::string(name_of(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllPairs, CastPairTest,
                         ::testing::Combine(::testing::ValuesIn(kAll), ::testing::ValuesIn(kAll)),
                         pair_name);

// Many rows over two threads; transposed (non-mergeable) input or output; every route.
TEST(Cast, ThreadsAndTransposedLayouts) {
  ThreadPool pool(2);
  Context ctx;
  ctx.thread_pool = &pool;
  std::mt19937_64 rng(9);
  const Pair pairs[] = {
      {DataType::kFloat32, DataType::kBFloat16},     {DataType::kBFloat16, DataType::kFloat16},
      {DataType::kFloat32, DataType::kFloat8E4M3FN}, {DataType::kHiFloat8, DataType::kFloat32},
      {DataType::kInt64, DataType::kFloat16},        {DataType::kFloat16, DataType::kFloat16}};
  for (const auto& [from, to] : pairs) {
    SCOPED_TRACE(std::string(name_of(from)) + " -> " + std::string(name_of(to)));
    const TensorStorage input = source({130, 700}, from, Layout::kContiguous, rng);
    const TensorStorage out = testing::poisoned({130, 700}, to);
    cast(input, out, ctx);
    expect_cast(input, out);
    // Transposed views: [700, 130] storage seen as [130, 700] with strides [1, 130].
    const TensorStorage t_in = source({700, 130}, from, Layout::kContiguous, rng);
    const TensorStorage t_out = testing::poisoned({700, 130}, to);
    const Tensor in_view = t_in.view().transpose(0, 1);
    const Tensor out_view = t_out.view().transpose(0, 1);
    const TensorStorage plain_out = testing::poisoned({130, 700}, to);
    cast(in_view, plain_out, ctx);
    expect_cast(in_view, plain_out.view(), plain_out);
    cast(in_view, out_view, ctx);
    expect_cast(in_view, out_view, t_out);
    cast(input, out_view, ctx);
    expect_cast(input.view(), out_view, t_out);
  }
}

TEST(Cast, BroadcastScalarAndEmpty) {
  std::mt19937_64 rng(4);
  // A stride-0 input dim repeats its row.
  const TensorStorage row = source({5}, DataType::kFloat32, Layout::kContiguous, rng);
  const Tensor repeated = row.view().with_shape({4, 5}, {0, 1});
  const TensorStorage out = testing::poisoned({4, 5}, DataType::kFloat8E5M2);
  cast(repeated, out);
  expect_cast(repeated, out.view(), out);
  // Rank 0: one element.
  const TensorStorage scalar = source({}, DataType::kFloat64, Layout::kContiguous, rng);
  const TensorStorage scalar_out = testing::poisoned({}, DataType::kInt32);
  cast(scalar, scalar_out);
  expect_cast(scalar, scalar_out);
  // Nothing to do, and nothing written.
  const TensorStorage empty = testing::poisoned({0, 7}, DataType::kFloat32);
  const TensorStorage empty_out = testing::poisoned({0, 7}, DataType::kInt8);
  cast(empty, empty_out);
  cast(Tensor(nullptr, {3, 0}, DataType::kFloat32), Tensor(nullptr, {3, 0}, DataType::kInt8));
}

// out may be input itself when the element sizes match.
TEST(Cast, InPlaceWithSameElementSize) {
  std::mt19937_64 rng(8);
  const TensorStorage data = source({3, 33}, DataType::kFloat32, Layout::kStrided, rng);
  const TensorStorage expected = testing::poisoned({3, 33}, DataType::kInt32, Layout::kStrided);
  cast(data, expected);
  const Tensor as_int =
      Tensor(data.data(), data.view().shape(), data.view().strides(), DataType::kInt32);
  cast(data, as_int);
  EXPECT_EQ(testing::to_doubles(as_int), testing::to_doubles(expected));

  const TensorStorage halves = source({2, 4097}, DataType::kBFloat16, Layout::kContiguous, rng);
  const TensorStorage want = testing::poisoned({2, 4097}, DataType::kFloat16);
  cast(halves, want);
  const Tensor as_f16(halves.data(), {2, 4097}, DataType::kFloat16);
  cast(halves, as_f16);
  EXPECT_EQ(std::memcmp(as_f16.data(), want.data(), want.bytes()), 0);
}

TEST(Cast, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(3);
  const TensorStorage input = source({4, 100}, DataType::kFloat32, Layout::kStrided, rng);
  const TensorStorage out = testing::poisoned({4, 100}, DataType::kHiFloat8);
  const Cast op(input, out);
  for (int round = 0; round < 3; ++round) {
    const TensorStorage x = source({4, 100}, DataType::kFloat32, Layout::kStrided, rng);
    const TensorStorage y = testing::poisoned({4, 100}, DataType::kHiFloat8);
    op(x, y);
    expect_cast(x, y);
  }
  const TensorStorage other = testing::poisoned({5, 100}, DataType::kHiFloat8);
  EXPECT_THROW(op(input, other), Error);
  EXPECT_EQ(active_implementation_indices("cast", DeviceType::kCpu), std::vector<int>{0});
  EXPECT_EQ(active_implementation_names("cast", DeviceType::kCpu),
            std::vector<std::string>{"native"});
}

TEST(Cast, RejectsBadInputs) {
  std::mt19937_64 rng(1);
  const TensorStorage input = source({4, 64}, DataType::kFloat32, Layout::kContiguous, rng);
  const TensorStorage out = testing::poisoned({4, 64}, DataType::kBFloat16);
  const TensorStorage wrong_shape = testing::poisoned({4, 63}, DataType::kBFloat16);
  const TensorStorage wrong_rank = testing::poisoned({256}, DataType::kBFloat16);
  expect_rejected([&] { cast(input, wrong_shape); }, wrong_shape, "out");
  expect_rejected([&] { cast(input, wrong_rank); }, wrong_rank, "out");
  expect_rejected([&] { cast(Tensor(nullptr, {4, 64}, DataType::kFloat32), out); }, out, "input");
  expect_rejected([&] { cast(input, Tensor(nullptr, {4, 64}, DataType::kInt8)); }, out, "out");
  const Tensor broadcast_out = out.view().with_shape({4, 64}, {0, 1});
  expect_rejected([&] { cast(input, broadcast_out); }, out, "out");
  const Tensor on_gpu(input.data(), {4, 64}, DataType::kFloat32, Device{DeviceType::kCuda, 0});
  expect_rejected([&] { cast(on_gpu, out); }, out, "input", ErrorKind::kUnsupported);
  Context ctx;
  ctx.implementation_index = 7;
  const auto before = testing::snapshot(out);
  EXPECT_THROW(cast(input, out, ctx), Error);
  EXPECT_EQ(testing::snapshot(out), before);
}

}  // namespace
}  // namespace ops
}  // namespace tileops
