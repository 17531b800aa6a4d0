// topk_topp_sampling on CPU: the probabilities themselves are the weights of the shared
// sampling core (sampling.h), after a check that they are non-negative with a positive sum.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "src/ops/contracts/topk_topp_sampling.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/sampling.h"
#include "src/ops/cpu/sampling_filters.h"
#include "src/ops/cpu/simd/convert.h"
#include "tileops/core/error.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/topk_topp_sampling.decl.h).
constexpr int kProbs = tensor_index(decls::topk_topp_sampling, "probs");
constexpr int kTopk = tensor_index(decls::topk_topp_sampling, "topk");
constexpr int kTopp = tensor_index(decls::topk_topp_sampling, "topp");
constexpr int kSeed = tensor_index(decls::topk_topp_sampling, "seed");
constexpr int kOut = tensor_index(decls::topk_topp_sampling, "out");

class TopkToppSamplingCpu final : public Operator {
 public:
  explicit TopkToppSamplingCpu(const Problem& p)
      : vocab_(p.tensors[kProbs].shape[1]),
        row_stride_(p.tensors[kProbs].strides[0]),
        col_stride_(p.tensors[kProbs].strides[1]),
        filters_(p, "topk_topp_sampling", "topp") {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& probs = tensors[kProbs];
    const auto seed = *static_cast<const std::uint64_t*>(tensors[kSeed].data());
    const std::int64_t n = vocab_;
    sample_rows(
        probs.size(0), n,
        [&](std::int64_t row, float* w) {
          load_f32(element_at(probs, row * row_stride_), probs.dtype(), col_stride_, n, w);
          bool valid = true;
          for (std::int64_t i = 0; i < n; ++i) valid &= w[i] >= 0.0f;  // false for NaN too
          if (!valid) {
            const std::int64_t i = std::find_if(w, w + n, [](float x) { return !(x >= 0.0f); }) - w;
            bad_row(row, "probs[" + std::to_string(i) + "] = " + std::to_string(w[i]));
          }
          const double total = sum_f64(w, n);
          if (!(total > 0.0) || !std::isfinite(total)) {
            bad_row(row, "a row sum of " + std::to_string(total));
          }
          return total;
        },
        [&](std::int64_t row) { return filters_(tensors[kTopk], tensors[kTopp], row); }, seed,
        tensors[kOut], ctx);
  }

 private:
  [[noreturn]] static void bad_row(std::int64_t row, const std::string& what) {
    throw_argument_error(ErrorKind::kInvalidArgument, "topk_topp_sampling", "probs",
                         "non-negative rows with a finite, positive sum",
                         what + " at row " + std::to_string(row));
  }

  std::int64_t vocab_;
  std::int64_t row_stride_;
  std::int64_t col_stride_;
  FilterReader filters_;
};

}  // namespace

void register_topk_topp_sampling(std::vector<Implementation>& out) {
  out.push_back({"topk_topp_sampling", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<TopkToppSamplingCpu>(p); }});
}

}  // namespace tileops::ops::cpu
