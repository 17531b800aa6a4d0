// memory_overlap (the overlap checks' test of whether two strided views share a byte) against a
// brute-force intersection of the bytes each view touches: random views over one small span of
// addresses (ranks 1-4, extents 0-4, strides 0-9, permuted and padded dense layouts, sibling
// slices, shifted and reinterpreted copies, element sizes 1/2/4/8 mixed between the two), then
// vLLM's cache layouts by name, the overflow guards and the work limit.
#include "src/ops/framework/memory_overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tileops::ops {
namespace {

constexpr std::uintptr_t kBase = 1 << 16;  // where the addresses of the random views start

struct View {
  std::uintptr_t begin = kBase;
  std::int64_t element_size = 1;
  std::vector<std::int64_t> shape, strides;

  ByteView bytes() const { return {begin, element_size, shape, strides}; }
  std::string describe() const {  // "@offset xsize extent:stride ..."
    std::ostringstream s;
    s << "@" << begin - kBase << " x" << element_size;
    for (std::size_t i = 0; i < shape.size(); ++i) s << " " << shape[i] << ":" << strides[i];
    return s.str();
  }
};

// Every byte (relative to kBase) the view touches.
std::vector<bool> touched(const View& v, std::size_t space) {
  std::vector<bool> bytes(space);
  if (std::find(v.shape.begin(), v.shape.end(), 0) != v.shape.end()) return bytes;
  std::vector<std::int64_t> index(v.shape.size(), 0);
  for (;;) {
    std::int64_t offset = static_cast<std::int64_t>(v.begin - kBase);
    for (std::size_t i = 0; i < index.size(); ++i)
      offset += index[i] * v.strides[i] * v.element_size;
    for (std::int64_t e = 0; e < v.element_size; ++e) bytes.at(offset + e) = true;
    std::size_t dim = index.size();
    while (dim > 0 && ++index[dim - 1] == v.shape[dim - 1]) index[--dim] = 0;
    if (dim == 0) return bytes;
  }
}

bool brute_force_shared(const View& a, const View& b) {
  constexpr std::size_t kSpace = 1 << 16;
  const std::vector<bool> x = touched(a, kSpace), y = touched(b, kSpace);
  for (std::size_t i = 0; i < kSpace; ++i) {
    if (x[i] && y[i]) return true;
  }
  return false;
}

class RandomViews {
 public:
  explicit RandomViews(std::uint64_t seed) : rng_(seed) {}

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  std::int64_t element_size() { return std::array<std::int64_t, 4>{1, 2, 4, 8}[uniform(0, 3)]; }

  // Arbitrary extents and strides (0 included), extent 1 with any stride.
  View arbitrary() {
    View v;
    v.element_size = element_size();
    v.begin = kBase + uniform(0, 40);
    const auto rank = uniform(1, 4);
    for (std::int64_t i = 0; i < rank; ++i) {
      const std::int64_t extent = uniform(0, 30) == 0 ? 0 : uniform(1, 4);
      v.shape.push_back(extent);
      v.strides.push_back(extent == 1 && uniform(0, 1) ? uniform(0, 500) : uniform(0, 9));
    }
    return v;
  }

  // A dense layout of `shape`, its dims laid out in a random order with random padding.
  std::vector<std::int64_t> permuted_strides(const std::vector<std::int64_t>& shape) {
    std::vector<std::size_t> order(shape.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    std::vector<std::int64_t> strides(shape.size());
    std::int64_t stride = 1;
    for (std::size_t dim : order) {
      strides[dim] = stride;
      stride *= shape[dim] + (uniform(0, 1) == 0 ? uniform(1, 3) : 0);
    }
    return strides;
  }

  View dense(std::int64_t element_size) {
    View v;
    v.element_size = element_size;
    v.begin = kBase + uniform(0, 16) * element_size;
    for (std::int64_t i = uniform(1, 4); i > 0; --i) v.shape.push_back(uniform(1, 4));
    v.strides = permuted_strides(v.shape);
    return v;
  }

  // Two slices of one parent along a dim (buf[:, i] and buf[:, j]), or every other index from two
  // starting points (even and odd columns).
  std::pair<View, View> siblings() {
    View parent = dense(element_size());
    const auto dim = static_cast<std::size_t>(uniform(0, parent.shape.size() - 1));
    parent.shape[dim] = uniform(2, 4);
    parent.strides = permuted_strides(parent.shape);
    View a = parent, b = parent;
    const std::int64_t i = uniform(0, parent.shape[dim] - 1), j = uniform(0, parent.shape[dim] - 1);
    a.begin += i * parent.strides[dim] * parent.element_size;
    b.begin += j * parent.strides[dim] * parent.element_size;
    if (uniform(0, 1)) {  // index dims dropped, as buf[:, i]
      a.shape[dim] = b.shape[dim] = 1;
    } else {  // every other index from i and from j
      const std::int64_t n = parent.shape[dim];
      a.shape[dim] = (n - i + 1) / 2;
      b.shape[dim] = (n - j + 1) / 2;
      a.strides[dim] = b.strides[dim] = 2 * parent.strides[dim];
    }
    return {a, b};
  }

  // The same bytes seen another way: shifted by a few bytes, permuted, or with another element
  // size over the same byte strides where they divide.
  View related(const View& a) {
    View b = a;
    switch (uniform(0, 2)) {
      case 0:
        b.begin = a.begin + uniform(0, 12);
        break;
      case 1:
        std::shuffle(b.strides.begin(), b.strides.end(), rng_);
        break;
      default:
        b.element_size = element_size();
        for (std::int64_t& s : b.strides) s = s * a.element_size / b.element_size;
        b.begin = a.begin + uniform(0, 3);
    }
    return b;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

void expect_exact(const View& a, const View& b, int& shared, int& apart) {
  SCOPED_TRACE(a.describe() + " | " + b.describe());
  const Overlap expected = brute_force_shared(a, b) ? Overlap::kShared : Overlap::kApart;
  (expected == Overlap::kShared ? shared : apart) += 1;
  ASSERT_EQ(memory_overlap(a.bytes(), b.bytes()), expected);
  ASSERT_EQ(memory_overlap(b.bytes(), a.bytes()), expected);
  ASSERT_EQ(memory_overlap_by_search(a.bytes(), b.bytes()), expected);
  ASSERT_EQ(memory_overlap_by_search(b.bytes(), a.bytes()), expected);
}

TEST(MemoryOverlap, AgreesWithBruteForceOnRandomViews) {
  RandomViews gen(42);
  constexpr int kCases = 20000;
  std::array<int, 4> shared{}, apart{};
  for (int c = 0; c < kCases; ++c) {
    switch (c % 4) {
      case 0:
        expect_exact(gen.arbitrary(), gen.arbitrary(), shared[0], apart[0]);
        break;
      case 1: {
        const View a = gen.dense(gen.element_size());
        expect_exact(a, gen.related(a), shared[1], apart[1]);
        break;
      }
      case 2: {
        const auto [a, b] = gen.siblings();
        expect_exact(a, b, shared[2], apart[2]);
        break;
      }
      default: {
        View a = gen.arbitrary();
        expect_exact(a, gen.related(a), shared[3], apart[3]);
      }
    }
    if (HasFatalFailure()) return;
  }
  // Each family has both answers often: a generator that drifted to one answer tests nothing.
  for (int f = 0; f < 4; ++f) {
    EXPECT_GT(shared[f], kCases / 40) << "family " << f;
    EXPECT_GT(apart[f], kCases / 40) << "family " << f;
  }
}

// vLLM's cache layouts and their neighbours, as Tensors over one real buffer. Each is also
// settled by the search alone within a few steps (the fast paths aside).
class NamedLayouts : public ::testing::Test {
 protected:
  static ByteView bytes(const Tensor& t) {
    return {reinterpret_cast<std::uintptr_t>(t.data()), static_cast<std::int64_t>(t.element_size()),
            std::span(t.shape().begin(), t.shape().end()),
            std::span(t.strides().begin(), t.strides().end())};
  }
  static void expect(const Tensor& a, const Tensor& b, bool shared) {
    SCOPED_TRACE(a.describe() + " | " + b.describe());
    EXPECT_EQ(may_share_memory(a, b), shared);
    EXPECT_EQ(may_share_memory(b, a), shared);
    const Overlap exact = shared ? Overlap::kShared : Overlap::kApart;
    EXPECT_EQ(memory_overlap_by_search(bytes(a), bytes(b), 16), exact);
  }
  Tensor at(std::int64_t element, const Dims& shape, const Dims& strides,
            DataType dtype = DataType::kFloat16) {
    return Tensor(buffer_.data() + element * static_cast<std::int64_t>(size_of(dtype)), shape,
                  strides, dtype);
  }
  std::vector<unsigned char> buffer_ = std::vector<unsigned char>(1 << 20);
};

constexpr std::int64_t kBlocks = 5, kHeads = 4, kBlockSize = 16, kHeadDim = 64;

// HND flash layout: one [blocks, 2, H, block_size, D] buffer; key and value caches are buf[:, 0]
// and buf[:, 1], seen as [blocks, block_size, H, D] (or kept as [blocks, H, block_size, D]).
TEST_F(NamedLayouts, HndKeyAndValueHalvesAreApart) {
  const Dims shape{kBlocks, kBlockSize, kHeads, kHeadDim};
  const Dims strides{2 * kHeads * kBlockSize * kHeadDim, kHeadDim, kBlockSize * kHeadDim, 1};
  const std::int64_t half = kHeads * kBlockSize * kHeadDim;
  expect(at(0, shape, strides), at(half, shape, strides), false);
  const Dims hnd_shape{kBlocks, kHeads, kBlockSize, kHeadDim};
  const Dims hnd_strides{2 * half, kBlockSize * kHeadDim, kHeadDim, 1};
  expect(at(0, hnd_shape, hnd_strides), at(half, hnd_shape, hnd_strides), false);
  // The whole buffer, and one block of it, meet both halves.
  const Tensor whole = at(0, {kBlocks * 2 * half}, {1});
  expect(whole, at(half, shape, strides), true);
  expect(at(half + 3 * 2 * half, {half}, {1}), at(half, shape, strides), true);
  expect(at(2 * half, {half}, {1}), at(half, shape, strides), false);  // block 1's key half
}

// NHD: [blocks, 2, block_size, H, D]; the halves are rows of one stride (the fast path).
TEST_F(NamedLayouts, NhdKeyAndValueHalvesAreApart) {
  const Dims shape{kBlocks, kBlockSize, kHeads, kHeadDim};
  const std::int64_t half = kBlockSize * kHeads * kHeadDim;
  const Dims strides{2 * half, kHeads * kHeadDim, kHeadDim, 1};
  expect(at(0, shape, strides), at(half, shape, strides), false);
}

// A value cache one head row past the key cache's start shares most of its bytes.
TEST_F(NamedLayouts, ShiftedCachesOverlap) {
  const Dims shape{kBlocks, kBlockSize, kHeads, kHeadDim};
  const Dims strides{2 * kHeads * kBlockSize * kHeadDim, kHeadDim, kBlockSize * kHeadDim, 1};
  expect(at(0, shape, strides), at(kHeadDim, shape, strides), true);
  expect(at(0, shape, strides), at(1, shape, strides), true);
  // Shifted by half an element: float16 bytes 1..2 meet bytes 0..1 and 2..3.
  expect(at(0, {8}, {2}), Tensor(buffer_.data() + 1, {8}, {2}, DataType::kFloat16), true);
}

// Even and odd columns of a [rows, 2·cols] matrix, also with another element size, and bytes of
// float32 elements seen as int16 halves.
TEST_F(NamedLayouts, InterleavedColumnsAreApart) {
  const DataType f32 = DataType::kFloat32;
  expect(at(0, {6, 8}, {16, 2}, f32), at(1, {6, 8}, {16, 2}, f32), false);
  expect(at(0, {6, 8}, {16, 2}, f32), at(3, {6, 7}, {16, 2}, f32), false);
  expect(at(0, {6, 8}, {16, 2}, f32), at(2, {6, 7}, {16, 2}, f32), true);
  const DataType i16 = DataType::kInt16;
  expect(at(0, {6, 8}, {32, 4}, i16), at(2, {6, 8}, {32, 4}, i16), false);  // float32 columns
  expect(at(0, {6, 8}, {32, 4}, i16), at(1, {6, 8}, {16, 2}, f32), false);  // and odd ones
  expect(at(0, {16}, {2}, i16), at(0, {8}, {1}, f32), true);                // low halves of floats
  expect(at(0, {16}, {2}, i16), at(1, {16}, {2}, i16), false);              // low and high halves
}

// A matrix and its transpose are the same memory; a transposed view of another block is not.
TEST_F(NamedLayouts, TransposedViewOverlaps) {
  const DataType f32 = DataType::kFloat32;
  expect(at(0, {8, 6}, {6, 1}, f32), at(0, {6, 8}, {1, 6}, f32), true);
  expect(at(0, {8, 6}, {12, 1}, f32), at(6, {6, 8}, {1, 12}, f32), false);  // padded rows
  expect(at(0, {8, 6}, {12, 1}, f32), at(5, {6, 8}, {1, 12}, f32), true);
}

// Empty views touch nothing, whatever they point at; a broadcast (stride 0) view touches its
// one row.
TEST_F(NamedLayouts, EmptyAndBroadcastViews) {
  const DataType f32 = DataType::kFloat32;
  expect(at(0, {0, 4}, {4, 1}, f32), at(0, {4, 4}, {4, 1}, f32), false);
  expect(at(0, {4, 0}, {0, 0}, f32), at(0, {4, 4}, {4, 1}, f32), false);
  expect(at(4, {4, 4}, {0, 1}, f32), at(0, {4, 4}, {8, 1}, f32), false);
  expect(at(8, {4, 4}, {0, 1}, f32), at(0, {4, 4}, {8, 1}, f32), true);
}

// Extents past int64 (possible for ByteViews, not for Tensors) and the top of the address space
// are undecided, never a wrapped answer; the empty view still touches nothing.
TEST(MemoryOverlap, OverflowIsUndecided) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::int64_t> three{3}, huge{kMax / 4}, one{1}, unit{1}, none{0};
  const std::vector<std::int64_t> two{2}, wide{std::int64_t{3} << 61};
  const ByteView small{kBase, 8, one, unit};
  EXPECT_EQ(memory_overlap({kBase, 8, three, huge}, small), Overlap::kUndecided);
  EXPECT_EQ(memory_overlap({kBase, 8, none, huge}, small), Overlap::kApart);
  const std::uintptr_t top = std::numeric_limits<std::uintptr_t>::max() - 3;
  EXPECT_EQ(memory_overlap({top, 8, one, unit}, {top, 1, one, unit}), Overlap::kUndecided);
  // Each extent fits, their sum does not.
  EXPECT_EQ(memory_overlap({kBase, 1, two, wide}, {kBase, 1, two, wide}), Overlap::kUndecided);
  EXPECT_EQ(memory_overlap({kBase, 0, one, unit}, small), Overlap::kUndecided);
}

// A dim of extent 1 never moves, whatever its stride (importers may leave a negative one there).
TEST(MemoryOverlap, ExtentOneDimsIgnoreTheirStride) {
  const std::vector<std::int64_t> shape{1, 4}, strides{-7, 2}, far{std::int64_t{1} << 62, 2};
  const std::vector<std::int64_t> four{4}, unit{1};
  const ByteView row{kBase + 2, 2, four, unit};
  EXPECT_EQ(memory_overlap({kBase, 2, shape, strides}, row), Overlap::kShared);
  EXPECT_EQ(memory_overlap({kBase, 2, shape, far}, row), Overlap::kShared);
  EXPECT_EQ(memory_overlap_by_search({kBase, 2, shape, strides}, row), Overlap::kShared);
  EXPECT_EQ(memory_overlap({kBase, 2, shape, strides}, {kBase + 2, 2, four, {}}),
            Overlap::kUndecided);  // shape and strides of different lengths
}

// Past its work limit the search answers kUndecided, which the overlap checks take as shared.
// Coprime strides over long extents: no contiguous block for the search to lean on, and no
// common byte either (6325 steps to show it).
TEST(MemoryOverlap, WorkLimitIsConservative) {
  const View a{kBase, 1, {9, 173, 142}, {82, 70, 105}}, b{kBase + 3896, 1, {165}, {140}};
  EXPECT_EQ(memory_overlap(a.bytes(), b.bytes()), Overlap::kUndecided);
  EXPECT_EQ(memory_overlap(a.bytes(), b.bytes(), 1 << 20), Overlap::kApart);
  EXPECT_FALSE(brute_force_shared(a, b));
  std::vector<unsigned char> buffer(1 << 16);
  const Tensor ta(buffer.data(), {9, 173, 142}, {82, 70, 105}, DataType::kUInt8);
  const Tensor tb(buffer.data() + 3896, {165}, {140}, DataType::kUInt8);
  EXPECT_TRUE(may_share_memory(ta, tb));
  // A cheap case needs more than one step: with one it is undecided too.
  const std::vector<std::int64_t> shape_c{6, 8}, strides_c{16, 2};
  EXPECT_EQ(memory_overlap_by_search({kBase, 4, shape_c, strides_c},
                                     {kBase + 4, 4, shape_c, strides_c}, 1),
            Overlap::kUndecided);
}

}  // namespace
}  // namespace tileops::ops
