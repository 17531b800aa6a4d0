// apply_rotary_pos_emb on CPU: the rotation engine of rotary_embedding (rotary.h) with the
// tables of token t read from row t of cos and sin.
#include <memory>

#include "src/ops/contracts/apply_rotary_pos_emb.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/rotary.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/apply_rotary_pos_emb.decl.h).
constexpr int kQuery = tensor_index(decls::apply_rotary_pos_emb, "query");
constexpr int kKey = tensor_index(decls::apply_rotary_pos_emb, "key");
constexpr int kCos = tensor_index(decls::apply_rotary_pos_emb, "cos");
constexpr int kSin = tensor_index(decls::apply_rotary_pos_emb, "sin");
constexpr int kQueryOut = tensor_index(decls::apply_rotary_pos_emb, "query_out");
constexpr int kKeyOut = tensor_index(decls::apply_rotary_pos_emb, "key_out");
constexpr int kHeadSize = attribute_index(decls::apply_rotary_pos_emb, "head_size");
constexpr int kIsNeoxStyle = attribute_index(decls::apply_rotary_pos_emb, "is_neox_style");
// Derived by the contract's check hook: the rotated width, and whether cos/sin are per element.
constexpr int kRotDim = derived_attribute_index(decls::apply_rotary_pos_emb, 0);
constexpr int kPerElement = derived_attribute_index(decls::apply_rotary_pos_emb, 1);

class ApplyRotaryPosEmbCpu final : public Operator {
 public:
  explicit ApplyRotaryPosEmbCpu(const Problem& p)
      : plan_(p.tensors[kQuery], p.tensors[kKey], p.tensors[kQueryOut], p.tensors[kKeyOut],
              static_cast<std::int64_t>(p.attributes[kHeadSize]),
              static_cast<std::int64_t>(p.attributes[kRotDim]), p.attributes[kIsNeoxStyle] != 0.0,
              1),
        per_element_(p.attributes[kPerElement] != 0.0),
        cos_rows_(p.tensors[kCos].strides[0]),
        cos_cols_(p.tensors[kCos].strides[1]),
        sin_rows_(p.tensors[kSin].strides[0]),
        sin_cols_(p.tensors[kSin].strides[1]) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& cos = tensors[kCos];
    const Tensor& sin = tensors[kSin];
    const std::int64_t rot_dim = plan_.rot_dim();
    const bool neox = plan_.neox();
    plan_.run(
        tensors[kQuery], tensors[kKey], tensors[kQueryOut], tensors[kKeyOut],
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
