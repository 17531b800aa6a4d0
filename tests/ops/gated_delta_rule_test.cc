// gated_delta_rule against a float64 reference of fla's per-token recurrence (S *= exp(g);
// S += k (beta (v - Sᵀk))ᵀ; o = scale Sᵀq): every float dtype, contiguous and strided tensors,
// token counts around the 64-token chunk, GVA, cu_seqlens (int32/int64, empty sequences), the
// l2norm option, initial and final states (also in place), the chunked form against the
// recurrent one in float32, the class form, and bad inputs that write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/gated_delta_rule.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;
using Values = std::vector<double>;

struct Shape {
  std::int64_t b, t, h, hv, dk, dv;
};

// The inputs of one case, as tensors and as the doubles their dtypes hold.
struct Inputs {
  Shape s;
  TensorStorage q, k, v, g, beta, state;
  bool has_state = false;
};

Inputs make_inputs(const Shape& s, DataType dtype, Layout layout, bool has_state,
                   std::mt19937_64& rng) {
  // |k|² about 1 and beta in (0, 1): the recurrence stays bounded without the l2norm.
  const double kr = std::sqrt(3.0 / static_cast<double>(s.dk));
  Inputs in{s,
            testing::random_tensor({s.b, s.t, s.h, s.dk}, dtype, rng, layout, -1, 1),
            testing::random_tensor({s.b, s.t, s.h, s.dk}, dtype, rng, layout, -kr, kr),
            testing::random_tensor({s.b, s.t, s.hv, s.dv}, dtype, rng, layout, -1, 1),
            testing::random_tensor({s.b, s.t, s.hv}, DataType::kFloat32, rng, layout, -0.7, 0),
            testing::random_tensor({s.b, s.t, s.hv}, dtype, rng, layout, 0, 1),
            {},
            has_state};
  return in;
}

// The float64 reference (tests/support/reference_ops.h) over the values the tensors hold.
void reference(const Inputs& in, const std::vector<std::int64_t>& cu, double scale, bool l2norm,
               Values& o, Values& state) {
  const Shape& s = in.s;
  o = testing::reference::gated_delta_rule(
      testing::to_doubles(in.q.view()), testing::to_doubles(in.k.view()),
      testing::to_doubles(in.v.view()), testing::to_doubles(in.g.view()),
      testing::to_doubles(in.beta.view()), {s.b, s.t, s.h, s.hv, s.dk, s.dv}, cu, scale, l2norm,
      state);
}

TensorStorage cu_tensor(const std::vector<std::int64_t>& cu, DataType dtype) {
  TensorStorage t({static_cast<std::int64_t>(cu.size())}, dtype);
  testing::from_doubles(t.view(), Values(cu.begin(), cu.end()));
  return t;
}

testing::Tolerance tolerance(DataType dtype) {
  if (dtype == DataType::kFloat32) return {2e-4, 2e-4};
  if (dtype == DataType::kFloat16) return {2e-3, 2e-3};
  return {1e-2, 1.6e-2};
}

// Runs one case in the given form and checks o and final_state against the reference.
void run_case(const Shape& s, DataType dtype, Layout layout, int chunk, bool has_state, bool l2norm,
              const std::vector<std::int64_t>& cu = {}, DataType cu_dtype = DataType::kInt64) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(s.t * 131 + s.hv * 7 + chunk + l2norm));
  Inputs in = make_inputs(s, dtype, layout, has_state, rng);
  const std::int64_t n_seq = cu.empty() ? s.b : static_cast<std::int64_t>(cu.size()) - 1;
  const Dims state_dims{n_seq, s.hv, s.dk, s.dv};
  if (has_state) in.state = testing::random_tensor(state_dims, DataType::kFloat32, rng, layout);
  Values o_ref, state_ref = has_state ? testing::to_doubles(in.state.view()) : Values();
  const double scale = l2norm ? 0.0 : 0.37;  // 0: K^-0.5
  reference(in, cu, scale == 0.0 ? 1.0 / std::sqrt(double(s.dk)) : scale, l2norm, o_ref, state_ref);
  TensorStorage o = testing::poisoned({s.b, s.t, s.hv, s.dv}, dtype, layout);
  TensorStorage final_state = testing::poisoned(state_dims, DataType::kFloat32, layout);
  const TensorStorage cu_t = cu.empty() ? TensorStorage() : cu_tensor(cu, cu_dtype);
  gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, scale, has_state ? in.state.view() : Tensor(),
                   cu.empty() ? Tensor() : cu_t.view(), l2norm, chunk, o, final_state);
  EXPECT_EQ(testing::compare(o.view(), o_ref, tolerance(dtype)), "") << "o";
  EXPECT_EQ(testing::compare(final_state.view(), state_ref, {2e-4, 2e-4}), "") << "final_state";
}

class GatedDeltaRuleTest : public ::testing::TestWithParam<std::tuple<DataType, Layout, int>> {};

TEST_P(GatedDeltaRuleTest, MatchesFloat64Recurrence) {
  const auto [dtype, layout, chunk] = GetParam();
  // Token counts around the chunk (1, 63, 64, 65, 130), GVA (HV = 2H), dims with vector tails.
  for (std::int64_t t : {1, 63, 65, 130}) {
    SCOPED_TRACE("T " + std::to_string(t));
    run_case({2, t, 2, 4, 16, 24}, dtype, layout, chunk, /*has_state=*/t != 63, /*l2norm=*/t > 64);
  }
  run_case({1, 64, 1, 1, 8, 5}, dtype, layout, chunk, true, false);
}

TEST_P(GatedDeltaRuleTest, VariableLengthSequences) {
  const auto [dtype, layout, chunk] = GetParam();
  // An empty sequence keeps its initial state; the others cross chunk boundaries.
  const std::vector<std::int64_t> cu{0, 3, 3, 70, 135};
  run_case({1, 135, 1, 2, 12, 20}, dtype, layout, chunk, true, true, cu, DataType::kInt32);
  run_case({1, 135, 2, 2, 12, 20}, dtype, layout, chunk, false, false, cu, DataType::kInt64);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, GatedDeltaRuleTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Values(0, 64)));

// The chunked form equals the recurrent one within 1e-4 in float32 (D = 64, l2-normalised q/k,
// several chunks and a tail).
TEST(GatedDeltaRule, ChunkedAgreesWithRecurrent) {
  std::mt19937_64 rng(3);
  const Shape s{1, 200, 2, 2, 64, 64};
  const Inputs in = make_inputs(s, DataType::kFloat32, Layout::kContiguous, false, rng);
  const TensorStorage h0 = testing::random_tensor({1, 2, 64, 64}, DataType::kFloat32, rng);
  TensorStorage o[2] = {TensorStorage({1, 200, 2, 64}, DataType::kFloat32),
                        TensorStorage({1, 200, 2, 64}, DataType::kFloat32)};
  TensorStorage state[2] = {TensorStorage({1, 2, 64, 64}, DataType::kFloat32),
                            TensorStorage({1, 2, 64, 64}, DataType::kFloat32)};
  for (int form = 0; form < 2; ++form) {
    gated_delta_rule(in.q, in.k, in.v, in.g, in.beta, 0.0, h0, Tensor(), true, form * 64, o[form],
                     state[form]);
  }
  EXPECT_EQ(testing::compare(o[1].view(), testing::to_doubles(o[0].view()), {1e-4, 0}), "");
  EXPECT_EQ(testing::compare(state[1].view(), testing::to_doubles(state[0].view()), {1e-4, 0}), "");
}

// Decode in place: final_state is initial_state, o is v; the class form reruns a geometry.
TEST(GatedDeltaRule, InPlaceStateAndClassForm) {
  std::mt19937_64 rng(5);
  const Shape s{3, 1, 2, 4, 16, 16};
  for (int chunk : {0, 64}) {
    Inputs in = make_inputs(s, DataType::kBFloat16, Layout::kContiguous, true, rng);
    in.state = testing::random_tensor({3, 4, 16, 16}, DataType::kFloat32, rng);
    Values o_ref, state_ref = testing::to_doubles(in.state.view());
    reference(in, {}, 0.25, false, o_ref, state_ref);
    const GatedDeltaRule op(in.q, in.k, in.v, in.g, in.beta, 0.25, in.state, Tensor(), false, chunk,
                            in.v, in.state);
    op(in.q, in.k, in.v, in.g, in.beta, in.state, Tensor(), in.v, in.state);
    EXPECT_EQ(testing::compare(in.v.view(), o_ref, tolerance(DataType::kBFloat16)), "");
    EXPECT_EQ(testing::compare(in.state.view(), state_ref, {2e-4, 2e-4}), "");
  }
}

TEST(GatedDeltaRule, BadInputsWriteNothing) {
  std::mt19937_64 rng(9);
  const Shape s{1, 6, 2, 4, 8, 8};
  Inputs in = make_inputs(s, DataType::kFloat32, Layout::kContiguous, false, rng);
  TensorStorage o = testing::poisoned({1, 6, 4, 8}, DataType::kFloat32);
  TensorStorage fs = testing::poisoned({1, 4, 8, 8}, DataType::kFloat32);
  const auto call = [&](const Tensor& q, const Tensor& v, const Tensor& g, const Tensor& h0,
                        const Tensor& cu, int chunk, const Tensor& out, const Tensor& state,
                        double scale = 0.0) {
    return [&, q, v, g, h0, cu, chunk, out, state, scale] {
      gated_delta_rule(q, in.k, v, g, in.beta, scale, h0, cu, false, chunk, out, state);
    };
  };
  const std::vector<const TensorStorage*> outs{&o, &fs};
  // HV not a multiple of H.
  TensorStorage v3 = testing::random_tensor({1, 6, 3, 8}, DataType::kFloat32, rng);
  TensorStorage o3 = testing::poisoned({1, 6, 3, 8}, DataType::kFloat32);
  TensorStorage fs3 = testing::poisoned({1, 3, 8, 8}, DataType::kFloat32);
  expect_rejected(call(in.q, v3, in.g, Tensor(), Tensor(), 0, o3, fs3), {&o3, &fs3}, "v");
  // g of the wrong shape, a bad chunk size, a NaN scale.
  TensorStorage g2 = testing::random_tensor({1, 6, 2}, DataType::kFloat32, rng);
  expect_rejected(call(in.q, in.v, g2, Tensor(), Tensor(), 0, o, fs), outs, "g");
  expect_rejected(call(in.q, in.v, in.g, Tensor(), Tensor(), 32, o, fs), outs, "chunk_size");
  expect_rejected(call(in.q, in.v, in.g, Tensor(), Tensor(), 0, o, fs,
                       std::numeric_limits<double>::quiet_NaN()),
                  outs, "scale");
  // States: wrong shape, wrong dtype.
  TensorStorage h_bad = testing::random_tensor({1, 4, 8, 7}, DataType::kFloat32, rng);
  expect_rejected(call(in.q, in.v, in.g, h_bad, Tensor(), 0, o, fs), outs, "initial_state");
  TensorStorage fs_half = testing::poisoned({1, 4, 8, 8}, DataType::kBFloat16);
  expect_rejected(call(in.q, in.v, in.g, Tensor(), Tensor(), 0, o, fs_half), {&o, &fs_half},
                  "final_state", ErrorKind::kInvalidType);
  // q and v of different dtypes.
  TensorStorage v_half = testing::random_tensor({1, 6, 4, 8}, DataType::kFloat16, rng);
  expect_rejected(call(in.q, v_half, in.g, Tensor(), Tensor(), 0, o, fs), outs, "v",
                  ErrorKind::kInvalidType);
  // cu_seqlens: a last value other than T, a decreasing one, B > 1.
  const TensorStorage cu_short = cu_tensor({0, 2, 5}, DataType::kInt32);
  TensorStorage fs2 = testing::poisoned({2, 4, 8, 8}, DataType::kFloat32);
  expect_rejected(call(in.q, in.v, in.g, Tensor(), cu_short, 0, o, fs2), {&o, &fs2}, "cu_seqlens");
  const TensorStorage cu_down = cu_tensor({0, 4, 2, 6}, DataType::kInt64);
  TensorStorage fs3b = testing::poisoned({3, 4, 8, 8}, DataType::kFloat32);
  expect_rejected(call(in.q, in.v, in.g, Tensor(), cu_down, 0, o, fs3b), {&o, &fs3b}, "cu_seqlens");
  Inputs two = make_inputs({2, 3, 2, 4, 8, 8}, DataType::kFloat32, Layout::kContiguous, false, rng);
  const TensorStorage cu_ok = cu_tensor({0, 3}, DataType::kInt64);
  TensorStorage o2 = testing::poisoned({2, 3, 4, 8}, DataType::kFloat32);
  TensorStorage fs1 = testing::poisoned({1, 4, 8, 8}, DataType::kFloat32);
  expect_rejected(
      [&] {
        gated_delta_rule(two.q, two.k, two.v, two.g, two.beta, 0.0, Tensor(), cu_ok, false, 0, o2,
                         fs1);
      },
      {&o2, &fs1}, "q", ErrorKind::kInvalidArgument, {"B = 1"});
}

}  // namespace
}  // namespace tileops::ops
