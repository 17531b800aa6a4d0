// top_k_top_p_sampler on CPU: per row, softmax weights e^(x - max) (float32 exp, float64 sum),
// then the shared sampling core (sampling.h); rows split over the thread pool.
#include <cmath>
#include <memory>
#include <string>

#include "src/ops/contracts/top_k_top_p_sampler.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/sampling.h"
#include "src/ops/cpu/sampling_filters.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/softmax_kernels.h"
#include "tileops/core/error.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/top_k_top_p_sampler.decl.h).
constexpr int kLogits = tensor_index(decls::top_k_top_p_sampler, "logits");
constexpr int kK = tensor_index(decls::top_k_top_p_sampler, "k");
constexpr int kP = tensor_index(decls::top_k_top_p_sampler, "p");
constexpr int kSeed = tensor_index(decls::top_k_top_p_sampler, "seed");
constexpr int kOut = tensor_index(decls::top_k_top_p_sampler, "out");

class TopKTopPSamplerCpu final : public Operator {
 public:
  explicit TopKTopPSamplerCpu(const Problem& p)
      : vocab_(p.tensors[kLogits].shape[1]),
        row_stride_(p.tensors[kLogits].strides[0]),
        col_stride_(p.tensors[kLogits].strides[1]),
        filters_(p, "top_k_top_p_sampler", "p") {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& logits = tensors[kLogits];
    const auto seed = *static_cast<const std::uint64_t*>(tensors[kSeed].data());
    const std::int64_t n = vocab_;
    sample_rows(
        logits.size(0), n,
        [&](std::int64_t row, float* w) {
          load_f32(element_at(logits, row * row_stride_), logits.dtype(), col_stride_, n, w);
          const float max = scaled_max(w, 1.0f, n);
          if (!std::isfinite(max)) {
            throw_argument_error(ErrorKind::kInvalidArgument, "top_k_top_p_sampler", "logits",
                                 "rows of finite values or -inf with one finite value",
                                 std::string(std::isnan(max) ? "a NaN"
                                             : max > 0       ? "+inf"
                                                             : "only -inf") +
                                     " in row " + std::to_string(row));
          }
          scaled_exp_sum(w, 1.0f, max, n, w);
          return sum_f64(w, n);
        },
        [&](std::int64_t row) { return filters_(tensors[kK], tensors[kP], row); }, seed,
        tensors[kOut], ctx);
  }

 private:
  std::int64_t vocab_;
  std::int64_t row_stride_;
  std::int64_t col_stride_;
  FilterReader filters_;
};

}  // namespace

void register_top_k_top_p_sampler(std::vector<Implementation>& out) {
  out.push_back({"top_k_top_p_sampler", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<TopKTopPSamplerCpu>(p); }});
}

}  // namespace tileops::ops::cpu
