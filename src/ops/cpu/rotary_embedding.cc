// rotary_embedding on CPU: every position is checked against the cache first (a bad one leaves
// the outputs untouched); then tokens (positions' elements, row-major) are split over the thread
// pool, each token's cos/sin cache row expanded once to per-element tables and applied to all its
// query and key heads.
#include <memory>
#include <string>

#include "src/ops/contracts/rotary_embedding.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/rotary.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "tileops/core/error.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/rotary_embedding.decl.h).
constexpr int kPositions = tensor_index(decls::rotary_embedding, "positions");
constexpr int kQuery = tensor_index(decls::rotary_embedding, "query");
constexpr int kKey = tensor_index(decls::rotary_embedding, "key");
constexpr int kCosSinCache = tensor_index(decls::rotary_embedding, "cos_sin_cache");
constexpr int kQueryOut = tensor_index(decls::rotary_embedding, "query_out");
constexpr int kKeyOut = tensor_index(decls::rotary_embedding, "key_out");
constexpr int kHeadSize = attribute_index(decls::rotary_embedding, "head_size");
constexpr int kIsNeoxStyle = attribute_index(decls::rotary_embedding, "is_neox_style");
constexpr int kRotaryDim = attribute_index(decls::rotary_embedding, "rotary_dim");

class RotaryEmbeddingCpu final : public Operator {
 public:
  explicit RotaryEmbeddingCpu(const Problem& p)
      : plan_(p.tensors[kQuery], p.tensors[kKey], p.tensors[kQueryOut], p.tensors[kKeyOut],
              static_cast<std::int64_t>(p.attributes[kHeadSize]),
              static_cast<std::int64_t>(p.attributes[kRotaryDim]),
              p.attributes[kIsNeoxStyle] != 0.0, p.tensors[kPositions].shape.size()),
        positions_int64_(p.tensors[kPositions].dtype == DataType::kInt64),
        positions_shape_(p.tensors[kPositions].shape),
        positions_(p.tensors[kPositions].shape, p.tensors[kPositions].strides,
                   p.tensors[kPositions].shape.size()),
        max_pos_(p.tensors[kCosSinCache].shape[0]),
        cache_row_(p.tensors[kCosSinCache].strides[0]),
        cache_col_(p.tensors[kCosSinCache].strides[1]) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& positions = tensors[kPositions];
    const Tensor& cache = tensors[kCosSinCache];
    check_positions(positions);
    const std::int64_t half = plan_.rot_dim() / 2;
    const DataType cache_dtype = cache.dtype();
    const bool neox = plan_.neox();
    const std::int64_t rot_dim = plan_.rot_dim();
    plan_.run(
        tensors[kQuery], tensors[kKey], tensors[kQueryOut], tensors[kKeyOut],
        [&](std::int64_t t, float* c, float* s, float* scratch) {
          const char* row = element_at(cache, position(positions, t) * cache_row_);
          const auto bytes = static_cast<std::int64_t>(cache.element_size());
          load_f32(row, cache_dtype, cache_col_, half, scratch);
          load_f32(row + half * cache_col_ * bytes, cache_dtype, cache_col_, half, scratch + half);
          expand_frequency_tables(scratch, scratch + half, rot_dim, neox, c, s);
        },
        ctx);
  }

 private:
  std::int64_t position(const Tensor& positions, std::int64_t t) const {
    return positions_int64_ ? positions.data_as<std::int64_t>()[positions_(t)]
                            : positions.data_as<std::int32_t>()[positions_(t)];
  }

  // Throws naming the first position outside [0, max_pos), its token and, for batched
  // positions, its index.
  void check_positions(const Tensor& positions) const {
    for (std::int64_t t = 0; t < plan_.tokens(); ++t) {
      const std::int64_t p = position(positions, t);
      if (p < 0 || p >= max_pos_) {
        throw_argument_error(
            ErrorKind::kInvalidArgument, "rotary_embedding", "positions",
            "positions in [0, " + std::to_string(max_pos_) + ") (the rows of cos_sin_cache)",
            "position " + std::to_string(p) + " at token " + std::to_string(t) + index_of(t));
      }
    }
  }

  // " (positions[1, 2])" for token t of batched positions; empty for [num_tokens].
  std::string index_of(std::int64_t t) const {
    if (positions_shape_.size() == 1) return "";
    Dims index;
    index.resize(positions_shape_.size());
    for (int i = positions_shape_.size() - 1; i >= 0; --i) {
      index[i] = t % positions_shape_[i];
      t /= positions_shape_[i];
    }
    return " (positions" + index.to_string() + ")";
  }

  RotaryPlan plan_;
  bool positions_int64_;
  Dims positions_shape_;
  TokenOffsets positions_;
  std::int64_t max_pos_;
  std::int64_t cache_row_;
  std::int64_t cache_col_;
};

}  // namespace

void register_rotary_embedding(std::vector<Implementation>& out) {
  out.push_back({"rotary_embedding", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<RotaryEmbeddingCpu>(p); }});
}

}  // namespace tileops::ops::cpu
