// gated_delta_rule beyond its declaration: the shapes that relate q/k, v, g, beta, the states and
// cu_seqlens (fla's [B, T, H, K] / [B, T, HV, V] layout, GVA when HV > H), the form, and the
// default scale K^-0.5 written into the attributes the implementation reads.
#include <cmath>
#include <string>

#include "src/ops/contracts/attention_checks.h"
#include "src/ops/contracts/gated_delta_rule.decl.h"
#include "src/ops/framework/arg_check.h"
#include "src/ops/framework/attention_layout.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr const OpDecl& kDecl = decls::gated_delta_rule;
constexpr int kQ = tensor_index(kDecl, "q");
constexpr int kV = tensor_index(kDecl, "v");
constexpr int kG = tensor_index(kDecl, "g");
constexpr int kBeta = tensor_index(kDecl, "beta");
constexpr int kInitial = tensor_index(kDecl, "initial_state");
constexpr int kCuSeqlens = tensor_index(kDecl, "cu_seqlens");
constexpr int kFinal = tensor_index(kDecl, "final_state");
constexpr int kScale = attribute_index(kDecl, "scale");
constexpr int kChunkSize = attribute_index(kDecl, "chunk_size");

std::string str(std::int64_t v) { return std::to_string(v); }

// N: the sequences, B without cu_seqlens, else its length - 1.
std::int64_t sequences(std::span<const Tensor> t) {
  return attention_present(t[kCuSeqlens]) ? t[kCuSeqlens].size(0) - 1 : t[kQ].size(0);
}

Dims state_shape(std::span<const Tensor> t) {
  return Dims{sequences(t), t[kV].size(2), t[kQ].size(3), t[kV].size(3)};
}

void check_values(const ArgCheck& check, std::span<const Tensor> t) {
  if (attention_present(t[kCuSeqlens])) {
    check_cumulative_lengths(check, t[kCuSeqlens], "cu_seqlens", t[kQ].size(1));
  }
}

void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attributes) {
  const Tensor& q = t[kQ];
  const Tensor& v = t[kV];
  const std::int64_t batch = q.size(0), tokens = q.size(1), heads = q.size(2);
  const std::int64_t value_heads = v.size(2);
  check.shape_is(v, "v", Dims{batch, tokens, value_heads, v.size(3)},
                 "[B, T, HV, V] with q's B and T");
  if (heads < 1 || q.size(3) < 1 || v.size(3) < 1) {
    check.fail(ErrorKind::kInvalidArgument, "q", "H >= 1 heads and K >= 1, V >= 1",
               "q " + q.shape().to_string() + ", v " + v.shape().to_string());
  }
  if (value_heads % heads != 0) {
    check.fail(ErrorKind::kInvalidArgument, "v", "HV heads, a multiple of q's H = " + str(heads),
               "HV = " + str(value_heads));
  }
  const Dims gates{batch, tokens, value_heads};
  check.shape_is(t[kG], "g", gates, "[B, T, HV]");
  check.shape_is(t[kBeta], "beta", gates, "[B, T, HV]");
  if (attention_present(t[kCuSeqlens])) {
    const Tensor& cu = t[kCuSeqlens];
    if (cu.size(0) < 1) {
      check.fail(ErrorKind::kInvalidArgument, "cu_seqlens", "shape [N + 1], N >= 0", "shape [0]");
    }
    if (batch != 1) {
      check.fail(ErrorKind::kInvalidArgument, "q", "batch size B = 1 with cu_seqlens",
                 "B = " + str(batch));
    }
    check_index_tensor(check, cu, "cu_seqlens", Dims{cu.size(0)}, "[N + 1]");
  }
  const Dims state = state_shape(t);
  if (attention_present(t[kInitial])) {
    check.shape_is(t[kInitial], "initial_state", state, "[N, HV, K, V]");
  }
  check.shape_is(t[kFinal], "final_state", state, "[N, HV, K, V]");
  const double chunk = attributes[kChunkSize];
  if (chunk != 0.0 && chunk != 64.0) {
    check.fail(ErrorKind::kInvalidArgument, "chunk_size",
               "0 (per-token recurrence) or 64 (chunked form)", str(std::int64_t(chunk)));
  }
  double& scale = attributes[kScale];
  if (!std::isfinite(scale) || std::fabs(scale) > 3.0e38) {
    check.fail(ErrorKind::kInvalidArgument, "scale", "a finite float32 value (0: K^-0.5)",
               std::to_string(scale));
  }
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  check_values(check, t);
}

Dims output_shape(std::string_view op, int, std::span<const Tensor> t, std::span<const double>) {
  if (t[kQ].rank() != 4 || t[kV].rank() != 4) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, t[kQ].rank() != 4 ? "q" : "v",
                         "rank 4 ([B, T, H, K] / [B, T, HV, V])",
                         (t[kQ].rank() != 4 ? t[kQ] : t[kV]).shape().to_string());
  }
  if (attention_present(t[kCuSeqlens]) && t[kCuSeqlens].size(0) < 1) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "cu_seqlens", "shape [N + 1], N >= 0",
                         t[kCuSeqlens].shape().to_string());
  }
  return state_shape(t);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp gated_delta_rule{
    decls::gated_delta_rule,
    {.check = check, .output_shape = output_shape, .check_data = check_values}};
}  // namespace contracts

}  // namespace tileops::ops
