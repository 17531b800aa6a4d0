// cast on CPU. The geometry is collapsed once per instance (extent-1 dims dropped, dims that
// are contiguous in both tensors merged), rows are cut into blocks and the blocks run over the
// thread pool. Each block takes the fastest exact route for its dtype pair: a bit copy for the
// same dtype, SIMD float32 row loads/stores among float32/float16/bfloat16, a 256-entry table
// for one-byte sources, a shared 65536-entry table from two-byte sources to one-byte targets
// (bfloat16 -> float8), and the pair's row converter otherwise.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "src/ops/contracts/cast.decl.h"
#include "src/ops/cpu/cast_rows.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "tileops/core/checked_size.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/cast.decl.h).
constexpr int kInput = tensor_index(decls::cast, "input");
constexpr int kOut = tensor_index(decls::cast, "out");

constexpr std::int64_t kBlock = 16384;             // elements per work item along a row
constexpr std::int64_t kMinPerThread = 64 * 1024;  // smaller casts stay on one thread
constexpr std::int64_t kStaging = 1024;            // float32 staging for float16 <-> bfloat16

struct Geometry {
  Dims shape;  // the last dim is the row
  Dims in_strides;
  Dims out_strides;
};

Geometry collapse(const TensorDesc& in, const TensorDesc& out) {
  // Innermost first: {extent, input stride, output stride}.
  std::vector<std::array<std::int64_t, 3>> dims;
  for (int i = in.shape.size() - 1; i >= 0; --i) {
    const std::int64_t extent = in.shape[i];
    if (extent == 1) continue;
    if (!dims.empty()) {
      auto& inner = dims.back();
      // An empty tensor may have extents whose products overflow: such dims are not merged.
      std::int64_t in_next = 0, out_next = 0, merged = 0;
      if (!__builtin_mul_overflow(inner[0], inner[1], &in_next) &&
          !__builtin_mul_overflow(inner[0], inner[2], &out_next) &&
          !__builtin_mul_overflow(inner[0], extent, &merged) && in.strides[i] == in_next &&
          out.strides[i] == out_next) {
        inner[0] = merged;
        continue;
      }
    }
    dims.push_back({extent, in.strides[i], out.strides[i]});
  }
  if (dims.empty()) dims.push_back({1, 1, 1});  // a scalar, or all extents 1
  Geometry g;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    g.shape.push_back((*it)[0]);
    g.in_strides.push_back((*it)[1]);
    g.out_strides.push_back((*it)[2]);
  }
  return g;
}

enum class Route { kCopy, kFloat, kLookup, kWideLookup, kConvert };

class CastCpu final : public Operator {
 public:
  explicit CastCpu(const Problem& problem)
      : from_(problem.tensors[kInput].dtype),
        to_(problem.tensors[kOut].dtype),
        geometry_(collapse(problem.tensors[kInput], problem.tensors[kOut])),
        convert_(cast_row_function(from_, to_)) {
    if (from_ == to_) {
      route_ = Route::kCopy;
    } else if (is_standard_float(from_) && is_standard_float(to_)) {
      route_ = Route::kFloat;
    } else if (size_of(from_) == 1) {
      route_ = Route::kLookup;
      lookup_ = lookup_row_function(to_);
      std::array<std::uint8_t, 256> patterns;
      for (int i = 0; i < 256; ++i) patterns[i] = static_cast<std::uint8_t>(i);
      convert_(patterns.data(), 1, table_.data(), 1, 256);
    } else if (size_of(from_) == 2 && size_of(to_) == 1) {
      route_ = Route::kWideLookup;
      wide_table_ = wide_lookup_table(from_, to_);
    } else {
      route_ = Route::kConvert;
    }
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[kInput];
    const Tensor& out = tensors[kOut];
    if (input.numel() == 0) return;
    const RowOffsets in_rows(geometry_.shape, geometry_.in_strides);
    const RowOffsets out_rows(geometry_.shape, geometry_.out_strides);
    const std::int64_t width = geometry_.shape.back();
    const std::int64_t in_stride = geometry_.in_strides.back();
    const std::int64_t out_stride = geometry_.out_strides.back();
    const std::int64_t block = std::min(width, kBlock);
    const std::int64_t blocks_per_row = ceil_div(width, block);
    const std::int64_t items = in_rows.rows() * blocks_per_row;
    ctx.threads().parallel_range(
        items, std::max<std::int64_t>(1, kMinPerThread / block),
        [&](int, std::int64_t begin, std::int64_t end) {
          for (std::int64_t item = begin; item < end; ++item) {
            const std::int64_t row = item / blocks_per_row;
            const std::int64_t column = (item % blocks_per_row) * block;
            const std::int64_t n = std::min(block, width - column);
            convert_block(element_at(input, in_rows(row) + column * in_stride), in_stride,
                          element_at(out, out_rows(row) + column * out_stride), out_stride, n);
          }
        });
  }

 private:
  void convert_block(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                     std::int64_t n) const {
    switch (route_) {
      case Route::kCopy:
        return copy_row(src, src_stride, dst, dst_stride, n, size_of(from_));
      case Route::kFloat:
        return convert_floats(src, src_stride, dst, dst_stride, n);
      case Route::kLookup:
        return lookup_(static_cast<const std::uint8_t*>(src), src_stride, dst, dst_stride, n,
                       table_.data());
      case Route::kWideLookup:
        return wide_lookup_row(static_cast<const std::uint16_t*>(src), src_stride,
                               static_cast<std::uint8_t*>(dst), dst_stride, n, wide_table_);
      case Route::kConvert:
        return convert_(src, src_stride, dst, dst_stride, n);
    }
  }

  // float32/float16/bfloat16 pairs: float32 is exact for all three, so one load and one store
  // round once, and the contiguous cases are SIMD.
  void convert_floats(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                      std::int64_t n) const {
    if (from_ == DataType::kFloat32 && src_stride == 1) {
      return store_f32(static_cast<const float*>(src), dst, to_, dst_stride, n);
    }
    if (to_ == DataType::kFloat32 && dst_stride == 1) {
      return load_f32(src, from_, src_stride, n, static_cast<float*>(dst));
    }
    const auto* s = static_cast<const char*>(src);
    auto* d = static_cast<char*>(dst);
    const auto in_step = src_stride * static_cast<std::int64_t>(size_of(from_));
    const auto out_step = dst_stride * static_cast<std::int64_t>(size_of(to_));
    float staging[kStaging];
    for (std::int64_t i = 0; i < n; i += kStaging) {
      const std::int64_t m = std::min(kStaging, n - i);
      load_f32(s + i * in_step, from_, src_stride, m, staging);
      store_f32(staging, d + i * out_step, to_, dst_stride, m);
    }
  }

  DataType from_;
  DataType to_;
  Geometry geometry_;
  CastRowFn convert_;
  Route route_ = Route::kConvert;
  LookupRowFn lookup_ = nullptr;
  // The 256 converted values of a one-byte source, as `to_` elements (8 bytes at most).
  alignas(8) std::array<unsigned char, 256 * 8> table_{};
  const std::uint8_t* wide_table_ = nullptr;  // two-byte source, one-byte target
};

}  // namespace

void register_cast(std::vector<Implementation>& out) {
  out.push_back({"cast", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<CastCpu>(p); }});
}

}  // namespace tileops::ops::cpu
