// apply_rotary_pos_emb on CPU: the rotation engine of rotary_embedding (rotary.h) with the
// tables of token t read from row t of cos and sin.
#include <memory>

#include "src/ops/cpu/register.h"
#include "src/ops/cpu/rotary.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"

namespace tileops::ops::cpu {
namespace {

class ApplyRotaryPosEmbCpu final : public Operator {
 public:
  explicit ApplyRotaryPosEmbCpu(const Problem& p)
      : plan_(p.tensors[0], p.tensors[1], p.tensors[4], p.tensors[5],
              static_cast<std::int64_t>(p.attributes[0]),
              static_cast<std::int64_t>(p.attributes[2]), p.attributes[1] != 0.0, 1),
        per_element_(p.attributes[3] != 0.0),
        cos_rows_(p.tensors[2].strides[0]),
        cos_cols_(p.tensors[2].strides[1]),
        sin_rows_(p.tensors[3].strides[0]),
        sin_cols_(p.tensors[3].strides[1]) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& cos = tensors[2];
    const Tensor& sin = tensors[3];
    const std::int64_t rot_dim = plan_.rot_dim();
    const bool neox = plan_.neox();
    plan_.run(
        tensors[0], tensors[1], tensors[4], tensors[5],
        [&](std::int64_t t, float* c, float* s, float* scratch) {
          const void* cos_row = element_at(cos, t * cos_rows_);
          const void* sin_row = element_at(sin, t * sin_rows_);
          if (per_element_) {
            load_f32(cos_row, cos.dtype(), cos_cols_, rot_dim, c);
            load_f32(sin_row, sin.dtype(), sin_cols_, rot_dim, s);
            sign_element_tables(rot_dim, neox, s);
          } else {
            const std::int64_t half = rot_dim / 2;
            load_f32(cos_row, cos.dtype(), cos_cols_, half, scratch);
            load_f32(sin_row, sin.dtype(), sin_cols_, half, scratch + half);
            expand_frequency_tables(scratch, scratch + half, rot_dim, neox, c, s);
          }
        },
        ctx);
  }

 private:
  RotaryPlan plan_;
  bool per_element_;
  std::int64_t cos_rows_;
  std::int64_t cos_cols_;
  std::int64_t sin_rows_;
  std::int64_t sin_cols_;
};

}  // namespace

void register_apply_rotary_pos_emb(std::vector<Implementation>& out) {
  out.push_back({"apply_rotary_pos_emb", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<ApplyRotaryPosEmbCpu>(p); }});
}

}  // namespace tileops::ops::cpu
