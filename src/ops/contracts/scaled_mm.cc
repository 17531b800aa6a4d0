// scaled_mm beyond its declaration: the K and N relations, the two forms of the scales (vLLM's
// dispatch_scaled_mm: per tensor/token/channel when scale_a has 1 or M elements and scale_b 1 or
// N, contiguous; else 128×128 blocks with exact shapes, any strides) and the bias's dtype. The
// typed function and class are generated; derives the scale form for the implementations.
#include <string>

#include "src/ops/contracts/scaled_mm.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/declared_op.h"
#include "tileops/ops/scaled_mm.h"

namespace tileops::ops {
namespace {

constexpr const OpDecl& kDecl = decls::scaled_mm;
constexpr int kA = tensor_index(kDecl, "a");
constexpr int kB = tensor_index(kDecl, "b");
constexpr int kScaleA = tensor_index(kDecl, "scale_a");
constexpr int kScaleB = tensor_index(kDecl, "scale_b");
constexpr int kBias = tensor_index(kDecl, "bias");
constexpr int kOut = tensor_index(kDecl, "out");

bool given(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

void contiguous(const ArgCheck& check, const Tensor& t, std::string_view arg) {
  if (!t.is_contiguous()) {
    check.fail(ErrorKind::kInvalidArgument, arg, "a contiguous float32 tensor (as vLLM's kernels)",
               t.describe());
  }
}

// Derives {block scales: 0 or 1}.
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  const Tensor& a = t[kA];
  const Tensor& b = t[kB];
  const std::int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k) {
    check.fail(ErrorKind::kInvalidArgument, "b",
               "[K, N] with K = " + std::to_string(k) + " (a's columns)", b.describe());
  }
  check.shape_is(t[kOut], "out", Dims{m, n}, "[M, N]: a's rows, b's columns");
  const Tensor& sa = t[kScaleA];
  const Tensor& sb = t[kScaleB];
  const bool standard =
      (sa.numel() == 1 || sa.numel() == m) && (sb.numel() == 1 || sb.numel() == n);
  if (standard) {
    contiguous(check, sa, "scale_a");
    contiguous(check, sb, "scale_b");
  } else {  // any strides: vLLM passes the transpose of a weight's [N/128, K/128] scales
    const std::int64_t kb = ceil_div(k, kScaledMmBlock), nb = ceil_div(n, kScaledMmBlock);
    const std::string why =
        " for 128x128 block scales (else scale_a numel 1 or M = " + std::to_string(m) +
        " and scale_b numel 1 or N = " + std::to_string(n) + ")";
    check.shape_is(sa, "scale_a", Dims{m, kb}, "[M, ceil(K/128)]" + why);
    check.shape_is(sb, "scale_b", Dims{kb, nb}, "[ceil(K/128), ceil(N/128)]" + why);
  }
  if (given(t[kBias])) {
    check.shape_is(t[kBias], "bias", Dims{n}, "[N], N = b's columns");
    check.dtype_is(t[kBias], "bias", t[kOut].dtype(), "out's dtype (vLLM: bias in out_dtype)");
  }
  attrs[derived_attribute_index(kDecl, 0)] = standard ? 0.0 : 1.0;
}

Dims output_shape(std::string_view op, int, std::span<const Tensor> t, std::span<const double>) {
  const ArgCheck check(op);  // before the declared rules: Python allocates first
  check.rank_is(t[kA], "a", 2);
  check.rank_is(t[kB], "b", 2);
  return Dims{t[kA].size(0), t[kB].size(1)};
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp scaled_mm{
    kDecl, {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
