#include "src/ops/cpu/tl/folded_loop.h"

#include "tileops/core/error.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu::tl_impl {

FoldedLoop::FoldedLoop(const Dims& shape, std::span<const Dims> strides, bool keep_last)
    : operands_(static_cast<int>(strides.size())) {
  if (operands_ > kMaxOperands) throw_internal_error("tl operator", "too many operands");
  empty_ = shape.product() == 0;
  // Fold from the innermost dim outwards into (extent, strides) columns.
  Dims extents;
  std::array<Dims, kMaxOperands> folded;
  const int rank = shape.size();
  for (int d = rank - 1; d >= 0; --d) {
    const bool last = d == rank - 1;
    if (shape[d] == 1 && !(last && keep_last)) continue;
    bool merge = !extents.empty() && !(keep_last && extents.size() == 1);
    for (int i = 0; merge && i < operands_; ++i) {
      const Dims& f = folded[static_cast<std::size_t>(i)];
      merge = strides[static_cast<std::size_t>(i)][d] == f[0] * extents[0];
    }
    if (merge) {
      extents[0] *= shape[d];
      continue;
    }
    extents.insert(0, shape[d]);
    for (int i = 0; i < operands_; ++i) {
      folded[static_cast<std::size_t>(i)].insert(0, strides[static_cast<std::size_t>(i)][d]);
    }
  }
  if (keep_last && extents.empty()) {  // rank 0: one row of one element
    extents.push_back(1);
    for (int i = 0; i < operands_; ++i) folded[static_cast<std::size_t>(i)].push_back(0);
  }
  // The innermost three columns form the view; the rest is enumerated on the host.
  const int n = extents.size();
  const int host = n > kRank ? n - kRank : 0;
  for (int c = 0; c < n; ++c) {
    const int slot = kRank - (n - c);
    for (int i = 0; i < operands_; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (c < host) {
        outer_strides_[u].push_back(folded[u][c]);
      } else {
        strides_[u][static_cast<std::size_t>(slot)] = folded[u][c];
      }
    }
    if (c < host) {
      outer_shape_.push_back(extents[c]);
    } else {
      shape_[static_cast<std::size_t>(slot)] = extents[c];
    }
  }
}

void FoldedLoop::for_each_launch(FunctionRef<void(const std::int64_t* offsets)> fn) const {
  if (empty_) return;
  std::array<std::int64_t, kMaxOperands> offsets{};
  const std::int64_t count = outer_shape_.product();
  for (std::int64_t index = 0; index < count; ++index) {
    std::int64_t rest = index;
    offsets.fill(0);
    for (int d = outer_shape_.size() - 1; d >= 0; --d) {
      const std::int64_t i = rest % outer_shape_[d];
      rest /= outer_shape_[d];
      for (int o = 0; o < operands_; ++o) {
        offsets[static_cast<std::size_t>(o)] += i * outer_strides_[static_cast<std::size_t>(o)][d];
      }
    }
    fn(offsets.data());
  }
}

tl::Pointer pointer_at(const Tensor& t, std::int64_t offset) {
  return tl::Pointer{
      static_cast<char*>(t.data()) + offset * static_cast<std::int64_t>(t.element_size()),
      t.dtype()};
}

// y = n + f with |f| <= 1/2, a degree-4 fit of 2^f, 2^n built in the exponent field (valid for
// y < 127.5).
tl::Value exp2_coarse(const tl::Value& y, const std::optional<tl::Value>& live) {
  const float magic = 12583039.0f;  // 1.5 * 2^23 + 127: t's low mantissa bits are n + 127
  const tl::Value yc = tl::where(y < -127.0f, -127.0f, y);  // NaN stays
  const tl::Value t = yc + magic;
  const tl::Value f = yc - (t - magic);
  const tl::Value p =
      (((0.009582852944731712f * f + 0.055906426161527634f) * f + 0.24024099111557007f) * f +
       0.6931241750717163f) *
          f +
      1.0f;
  const tl::Value e = p * (t.bitcast(DataType::kInt32) << 23).bitcast(DataType::kFloat32);
  return live ? tl::where(*live, e, 0.0f) : e;
}

}  // namespace tileops::ops::cpu::tl_impl
