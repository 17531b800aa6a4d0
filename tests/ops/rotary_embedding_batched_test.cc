// rotary_embedding's batched form (vLLM's test_pos_encoding): positions [batch, seq] (or any rank)
// with query/key [batch, seq, H*D] or [batch, seq, H, D], against the float64 reference: every
// float dtype, both styles, full and partial rotary, key or none, and views whose tokens do not
// collapse into one stride (a padded head, transposed batch/seq, every dim padded); outputs
// poisoned; in place equal to out of place; shapes that disagree with positions are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/rotary_reference.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/rotary_embedding.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

constexpr std::int64_t kBatch = 2;
constexpr std::int64_t kSeq = 3;
constexpr std::int64_t kMaxPos = 40;
constexpr std::int64_t kPad = 5;

enum class View {
  kContiguous,
  kPaddedLastDim,  // vLLM's query[..., :head_size] of a wider tensor (and qkv split views)
  kTransposed,     // [batch, seq] stored as [seq, batch]: the tokens' dims do not collapse
  kStrided,        // every dim padded
};

const char* view_name(View v) {
  switch (v) {
    case View::kContiguous:
      return "contiguous";
    case View::kPaddedLastDim:
      return "padded last dim";
    case View::kTransposed:
      return "transposed batch/seq";
    case View::kStrided:
      return "strided";
  }
  return "?";
}

void PrintTo(View v, std::ostream* os) { *os << view_name(v); }

// A view of `shape` over storage laid out as `view` says; random values in [lo, hi) or poisoned.
struct Operand {
  TensorStorage storage;
  Tensor view;
};

Operand make(const Dims& shape, DataType dtype, View view, std::mt19937_64& rng, bool poison,
             double lo = -2.0, double hi = 2.0) {
  const auto fill = [&](const Dims& s, Layout layout) {
    return poison ? testing::poisoned(s, dtype, layout)
                  : testing::random_tensor(s, dtype, rng, layout, lo, hi);
  };
  Operand o;
  const int last = shape.size() - 1;
  switch (view) {
    case View::kContiguous:
    case View::kStrided:
      o.storage = fill(shape, view == View::kStrided ? Layout::kStrided : Layout::kContiguous);
      o.view = o.storage.view();
      break;
    case View::kPaddedLastDim: {
      Dims wide = shape;
      wide[last] += kPad;
      o.storage = fill(wide, Layout::kContiguous);
      o.view = o.storage.view().slice(last, 0, shape[last]);
      break;
    }
    case View::kTransposed: {
      Dims swapped = shape;
      std::swap(swapped[0], swapped[1]);
      o.storage = fill(swapped, Layout::kContiguous);
      o.view = o.storage.view().transpose(0, 1);
      break;
    }
  }
  return o;
}

// The padding of a kPaddedLastDim operand (empty for the other views).
std::vector<double> padding(const Operand& o, View view) {
  if (view != View::kPaddedLastDim || o.storage.data() == nullptr) return {};
  const Tensor& all = o.storage.view();
  return testing::to_doubles(all.slice(all.rank() - 1, o.view.size(-1), kPad));
}

struct Shape {
  std::int64_t heads, kv_heads, head_size, rot_dim;
  bool four_d;  // [batch, seq, H, D] rather than [batch, seq, H*D]
  bool has_key;
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << "heads " << s.heads << "/" << s.kv_heads << ", head_size " << s.head_size << ", rot_dim "
      << s.rot_dim << (s.four_d ? ", [B, S, H, D]" : ", [B, S, H*D]")
      << (s.has_key ? "" : ", no key");
}

Dims operand_shape(const Shape& s, std::int64_t heads) {
  return s.four_d ? Dims{kBatch, kSeq, heads, s.head_size}
                  : Dims{kBatch, kSeq, heads * s.head_size};
}

using Param = std::tuple<DataType, bool, View, Shape>;

class RotaryEmbeddingBatchedTest : public ::testing::TestWithParam<Param> {};

TEST_P(RotaryEmbeddingBatchedTest, MatchesFloat64Reference) {
  const auto [dtype, neox, view, s] = GetParam();
  SCOPED_TRACE(view_name(view));
  std::mt19937_64 rng(11);
  // Positions laid out like the operands (transposed too), so their offsets are tested alike.
  const Operand positions =
      make({kBatch, kSeq}, DataType::kInt64, view, rng, false, 0, static_cast<double>(kMaxPos));
  auto cache = testing::rotary_cache(kMaxPos, s.rot_dim, dtype, Layout::kContiguous);
  const Operand query = make(operand_shape(s, s.heads), dtype, view, rng, false);
  const Operand key =
      s.has_key ? make(operand_shape(s, s.kv_heads), dtype, view, rng, false) : Operand{};
  const Tensor& pos = positions.view;
  const auto expected_q = testing::rotary_reference(query.view, pos, cache, s.head_size, neox);
  const auto expected_k = s.has_key
                              ? testing::rotary_reference(key.view, pos, cache, s.head_size, neox)
                              : std::vector<double>{};
  const auto tol = testing::tolerance_for(dtype);

  // Out of place into poisoned outputs of the same view kind: every element is written.
  const auto q_before = testing::snapshot(query.storage);
  const Operand q_out = make(query.view.shape(), dtype, view, rng, true);
  const Operand k_out = s.has_key ? make(key.view.shape(), dtype, view, rng, true) : Operand{};
  const std::int64_t rotary_dim = s.rot_dim == s.head_size ? -1 : s.rot_dim;
  rotary_embedding(pos, query.view, key.view, s.head_size, cache, neox, rotary_dim, q_out.view,
                   k_out.view);
  EXPECT_EQ(testing::compare(q_out.view, expected_q, tol), "");
  if (s.has_key) {
    EXPECT_EQ(testing::compare(k_out.view, expected_k, tol), "");
  }
  EXPECT_EQ(testing::snapshot(query.storage), q_before);

  // In place (vLLM's form) gives the same bits and leaves the padding alone.
  const auto q_pad = padding(query, view);
  const auto k_pad = padding(key, view);
  rotary_embedding(pos, query.view, key.view, s.head_size, cache, neox);
  EXPECT_EQ(testing::to_doubles(query.view), testing::to_doubles(q_out.view));
  EXPECT_EQ(padding(query, view), q_pad);
  if (s.has_key) {
    EXPECT_EQ(testing::to_doubles(key.view), testing::to_doubles(k_out.view));
    EXPECT_EQ(padding(key, view), k_pad);
  }
}

INSTANTIATE_TEST_SUITE_P(
    StylesViewsDtypes, RotaryEmbeddingBatchedTest,
    ::testing::Combine(
        ::testing::Values(DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16),
        ::testing::Bool(),
        ::testing::Values(View::kContiguous, View::kPaddedLastDim, View::kTransposed,
                          View::kStrided),
        ::testing::Values(Shape{4, 2, 32, 32, true, true}, Shape{3, 1, 24, 8, false, true},
                          Shape{2, 2, 10, 6, true, false}, Shape{1, 1, 16, 16, false, false})));

// Tokens of any rank: positions [2, 2, 3] with the middle dim stored outermost, query [*, H, D].
TEST(RotaryEmbeddingBatched, ThreeTokenDimsThatDoNotCollapse) {
  std::mt19937_64 rng(17);
  constexpr std::int64_t kD = 8;
  auto pos_storage =
      testing::random_tensor({2, 2, 3}, DataType::kInt32, rng, Layout::kContiguous, 0, kMaxPos);
  const Tensor positions = pos_storage.view().transpose(0, 1);  // [2, 2, 3], strides [6, 12, 1]
  auto q_storage = testing::random_tensor({2, 2, 3, 2, kD}, DataType::kFloat32, rng);
  const Tensor query = q_storage.view().transpose(0, 1);
  auto cache = testing::rotary_cache(kMaxPos, kD, DataType::kFloat32, Layout::kContiguous);
  auto out = testing::poisoned(query.shape(), DataType::kFloat32, Layout::kStrided);
  for (const bool neox : {true, false}) {
    rotary_embedding(positions, query, Tensor(), kD, cache, neox, -1, out, Tensor());
    EXPECT_EQ(
        testing::compare(out.view(), testing::rotary_reference(query, positions, cache, kD, neox),
                         testing::tolerance_for(DataType::kFloat32)),
        "");
  }
}

TEST(RotaryEmbeddingBatched, NoTokens) {
  auto positions = testing::poisoned({2, 0}, DataType::kInt64);
  auto query = testing::poisoned({2, 0, 16}, DataType::kFloat32);
  auto cache = testing::rotary_cache(kMaxPos, 8, DataType::kFloat32, Layout::kContiguous);
  EXPECT_NO_THROW(rotary_embedding(positions, query, Tensor(), 8, cache, true));
}

TEST(RotaryEmbeddingBatched, RejectsShapesThatDisagreeWithPositions) {
  std::mt19937_64 rng(4);
  constexpr std::int64_t kD = 8;
  auto positions = testing::random_tensor({kBatch, kSeq}, DataType::kInt64, rng,
                                          Layout::kContiguous, 0, kMaxPos);
  auto cache = testing::rotary_cache(kMaxPos, kD, DataType::kFloat32, Layout::kContiguous);
  auto query = testing::random_tensor({kBatch, kSeq, 2 * kD}, DataType::kFloat32, rng);
  auto key = testing::random_tensor({kBatch, kSeq, 1, kD}, DataType::kFloat32, rng);
  // Operands that disagree with positions [2, 3]: batch and seq swapped, the tokens flattened,
  // an extra leading dim, another seq_len (key), not whole heads in either layout.
  auto swapped = testing::random_tensor({kSeq, kBatch, 2 * kD}, DataType::kFloat32, rng);
  auto flat = testing::random_tensor({kBatch * kSeq, 2 * kD}, DataType::kFloat32, rng);
  auto extra = testing::random_tensor({1, kBatch, kSeq, 2, kD}, DataType::kFloat32, rng);
  auto key_seq4 = testing::random_tensor({kBatch, kSeq + 1, 1, kD}, DataType::kFloat32, rng);
  auto ragged = testing::random_tensor({kBatch, kSeq, 2 * kD + 2}, DataType::kFloat32, rng);
  auto wide_head = testing::random_tensor({kBatch, kSeq, 1, kD + 2}, DataType::kFloat32, rng);
  auto q_out = testing::poisoned({kBatch, kSeq, 2 * kD}, DataType::kFloat32);
  auto k_out = testing::poisoned({kBatch, kSeq, 1, kD}, DataType::kFloat32);
  // In place, so the refused operand is itself an output that must stay untouched.
  const std::vector<const TensorStorage*> outs{&query,    &key,    &swapped,   &flat,  &extra,
                                               &key_seq4, &ragged, &wide_head, &q_out, &k_out};
  const Tensor table = cache.view();
  const auto call = [&](const Tensor& pos, const Tensor& q, const Tensor& k) {
    return [=] { rotary_embedding(pos, q, k, kD, table, true); };
  };
  const std::vector<std::string> layouts{"[2, 3, H*8] or [2, 3, H, 8]", "positions' shape"};
  for (const TensorStorage* bad : {&swapped, &flat, &extra, &ragged}) {
    expect_rejected(call(positions, *bad, key), outs, "query", ErrorKind::kInvalidArgument,
                    layouts);
  }
  for (const TensorStorage* bad : {&key_seq4, &wide_head}) {
    expect_rejected(call(positions, query, *bad), outs, "key", ErrorKind::kInvalidArgument,
                    layouts);
  }
  // Positions [num_tokens] with the batched query.
  auto flat_pos = testing::random_tensor({kBatch * kSeq}, DataType::kInt64, rng,
                                         Layout::kContiguous, 0, kMaxPos);
  expect_rejected(call(flat_pos, query, key), outs, "query", ErrorKind::kInvalidArgument,
                  {"[6, H*8] or [6, H, 8]"});
  // A scalar position is not a token list.
  auto scalar = testing::random_tensor({}, DataType::kInt64, rng, Layout::kContiguous, 0, 1);
  expect_rejected(call(scalar, query, key), outs, "positions");
  // An output whose leading dims differ from its input's.
  auto q_out_swapped = testing::poisoned({kSeq, kBatch, 2 * kD}, DataType::kFloat32);
  expect_rejected(
      [&] { rotary_embedding(positions, query, key, kD, cache, true, -1, q_out_swapped, k_out); },
      std::vector<const TensorStorage*>{&q_out_swapped, &k_out, &query, &key}, "query_out");
  // A bad position names its token and its index in positions; nothing is written.
  std::vector<double> p = testing::to_doubles(positions);
  p[4] = kMaxPos;
  testing::from_doubles(positions, p);
  expect_rejected(
      [&] { rotary_embedding(positions, query, key, kD, cache, true, -1, q_out, k_out); }, outs,
      "positions", ErrorKind::kInvalidArgument, {"position 40", "token 4", "positions[1, 1]"});
  expect_rejected(call(positions, query, key), outs, "positions", ErrorKind::kInvalidArgument,
                  {"positions[1, 1]"});
}

}  // namespace
}  // namespace tileops::ops
