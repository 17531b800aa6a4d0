// FoldedLoop: an operator's iteration space folded to the rank-3 views the tile-language kernels
// of this folder take ([d0, d1, d2] with per-operand strides in elements). Dims of extent 1 are
// dropped and neighbours that are contiguous in every operand are merged; what is left beyond
// three dims is enumerated on the host, one kernel launch per leading index (rare: it needs a
// rank-4 layout that no merge can flatten). Also the helpers every kernel here shares.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "tileops/core/dims.h"
#include "tileops/core/tensor.h"
#include "tileops/runtime/function_ref.h"
#include "tileops/tl/jit.h"
#include "tileops/tl/value.h"

namespace tileops::ops::cpu::tl_impl {

class FoldedLoop {
 public:
  static constexpr int kMaxOperands = 6;
  static constexpr int kRank = 3;
  using View = std::array<std::int64_t, kRank>;

  // shape: the iteration space; strides[i]: operand i's strides aligned to it (0 = broadcast).
  // keep_last: the last dim stays the innermost view dim on its own (row operators reduce over
  // it), even when its extent is 1; otherwise it merges like any other dim.
  FoldedLoop(const Dims& shape, std::span<const Dims> strides, bool keep_last);

  const View& shape() const { return shape_; }
  const View& strides(int operand) const { return strides_[static_cast<std::size_t>(operand)]; }
  bool empty() const { return empty_; }

  // Calls fn(offsets) once per launch; offsets[i] is operand i's element offset of the view.
  void for_each_launch(FunctionRef<void(const std::int64_t* offsets)> fn) const;

 private:
  int operands_ = 0;
  bool empty_ = false;
  View shape_{1, 1, 1};
  std::array<View, kMaxOperands> strides_{};
  Dims outer_shape_;  // the host-enumerated leading dims
  std::array<Dims, kMaxOperands> outer_strides_;
};

// A tensor's data shifted by `offset` elements, as a kernel argument.
tl::Pointer pointer_at(const Tensor& t, std::int64_t offset);

// 16-bit floats compute in float32: v widened (unchanged when already float32), and a float32
// result rounded back to `dtype` (unchanged for float32).
inline tl::Value as_f32(const tl::Value& v) {
  return v.dtype() == DataType::kFloat32 ? v : v.to(DataType::kFloat32);
}
inline tl::Value as_dtype(const tl::Value& v, DataType dtype) {
  return dtype == DataType::kFloat32 ? v : v.to(dtype);
}

inline constexpr double kLog2e = 1.44269504088896341;

// 2^y for y < 127.5 to a relative error below 3e-6 (0 below -126.5, -inf included; NaN gives NaN),
// as the native 16-bit kernels compute it (src/ops/cpu/simd/fast_exp-inl.h, Exp2Coarse): for
// results rounded to 16 bits (half an ulp: 2e-3 for bfloat16, 2.4e-4 for float16) as good as
// exp's 2 ulps at about half the instructions.
// With `live` (a bool tile), 0 where it is false: the select goes on the result, which keeps the
// expression of y out of it (the code generator fuses expressions of up to 2000 characters; one
// masked y inside the polynomial's several copies of f split the loop in two).
tl::Value exp2_coarse(const tl::Value& y, const std::optional<tl::Value>& live = std::nullopt);

// Options of the kernels with exp (softmax, silu): fast_math's exp is as accurate as the default
// one down to results of e^-86.9 and about half its cost; smaller results are 0, which a softmax
// or a silu cannot tell from e^-86.9 at float32 precision; products may contract into FMAs.
inline const tl::Options kFastMath{.fast_math = true};

}  // namespace tileops::ops::cpu::tl_impl
