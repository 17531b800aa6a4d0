// quantize_weight on CPU: a one-time pass, so written for exactness rather than speed. Scales
// and codes are computed in float64 from the float32 value of each weight, and the scale is
// rounded to float32 before the codes are formed from it, so that the stored codes are exactly
// round(w / scale) for the stored scale (round half away from zero), on every SIMD target.
#include "src/ops/cpu/gemm/quantize_weight.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "src/ops/contracts/quantize_weight.decl.h"
#include "src/ops/contracts/quantized_format.h"
#include "src/ops/cpu/simd/convert.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kTile = kQuantizedTileRows;

// One group of one row: its scale, zero point and codes (int8: -127..127; int4 symmetric:
// -8..7 stored + 8; int4 with zero points: 0..15).
struct GroupCodes {
  float scale = 0.0f;
  float zero = 0.0f;
};

GroupCodes quantize_group(const float* w, std::int64_t len, int bits, bool symmetric, int* codes) {
  GroupCodes out;
  if (symmetric) {
    double amax = 0.0;
    for (std::int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(double{w[i]}));
    const double qmax = bits == 8 ? 127.0 : 7.0, qmin = bits == 8 ? -127.0 : -8.0;
    out.scale = static_cast<float>(amax / qmax);
    for (std::int64_t i = 0; i < len; ++i) {
      const double q = out.scale == 0.0f ? 0.0 : std::round(double{w[i]} / double{out.scale});
      codes[i] = static_cast<int>(std::clamp(q, qmin, qmax));
    }
    return out;
  }
  double lo = 0.0, hi = 0.0;  // the range always holds 0, so zero is exact
  for (std::int64_t i = 0; i < len; ++i) {
    lo = std::min(lo, double{w[i]});
    hi = std::max(hi, double{w[i]});
  }
  out.scale = static_cast<float>((hi - lo) / 15.0);
  if (out.scale != 0.0f)
    out.zero = static_cast<float>(std::clamp(std::round(-lo / out.scale), 0.0, 15.0));
  for (std::int64_t i = 0; i < len; ++i) {
    const double q = out.scale == 0.0f ? 0.0 : std::round(double{w[i]} / double{out.scale});
    codes[i] = static_cast<int>(std::clamp(q + out.zero, 0.0, 15.0));
  }
  return out;
}

class QuantizeWeightCpu final : public Operator {
 public:
  explicit QuantizeWeightCpu(const Problem& p)
      : bits_(static_cast<int>(p.attributes[attribute_index(decls::quantize_weight, "bits")])),
        group_size_(
            static_cast<int>(p.attributes[attribute_index(decls::quantize_weight, "group_size")])),
        symmetric_(p.attributes[attribute_index(decls::quantize_weight, "symmetric")] != 0.0) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& weight = tensors[tensor_index(decls::quantize_weight, "weight")];
    auto* dst =
        static_cast<std::uint8_t*>(tensors[tensor_index(decls::quantize_weight, "qweight")].data());
    const QuantizedLayout l = quantized_layout("quantize_weight", weight.size(0), weight.size(1),
                                               bits_, group_size_, symmetric_);
    ThreadPool& pool = ctx.threads();
    // A non-finite weight has no scale: refused before anything is written.
    std::atomic<bool> finite{true};
    pool.parallel_range(l.n, 16, [&](int, std::int64_t r0, std::int64_t r1) {
      std::vector<float> row(static_cast<std::size_t>(l.k));
      for (std::int64_t r = r0; r < r1 && finite.load(std::memory_order_relaxed); ++r) {
        load_f32_row(weight, r, row.data());
        if (!std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); })) {
          finite = false;
        }
      }
    });
    if (!finite) {
      throw_argument_error(ErrorKind::kInvalidArgument, "quantize_weight", "weight",
                           "finite values", "a NaN or infinity");
    }
    write_quantized_header(l, dst);
    pool.parallel_range(l.tiles, 1, [&](int, std::int64_t t0, std::int64_t t1) {
      std::vector<float> rows(static_cast<std::size_t>(kTile * l.k_padded));
      std::vector<int> codes(static_cast<std::size_t>(l.group));
      for (std::int64_t t = t0; t < t1; ++t) {
        std::fill(rows.begin(), rows.end(), 0.0f);  // padded rows and columns quantize to 0
        for (std::int64_t r = 0; r < kTile && t * kTile + r < l.n; ++r) {
          load_f32_row(weight, t * kTile + r, rows.data() + r * l.k_padded);
        }
        for (std::int64_t g = 0; g < l.groups_per_row; ++g) {
          write_block(l, rows.data() + g * l.group, codes.data(), dst + l.block_offset(t, g));
        }
      }
    });
  }

 private:
  // The block of one tile and group: `w` is row 0's group, rows k_padded apart.
  void write_block(const QuantizedLayout& l, const float* w, int* codes,
                   std::uint8_t* block) const {
    std::uint8_t* code_bytes = block + l.meta_bytes;
    for (std::int64_t r = 0; r < kTile; ++r) {
      const GroupCodes gc = quantize_group(w + r * l.k_padded, l.group, bits_, symmetric_, codes);
      std::memcpy(block + r * 4, &gc.scale, 4);
      if (!symmetric_) std::memcpy(block + (kTile + r) * 4, &gc.zero, 4);
      if (bits_ == 4 && symmetric_) {  // stored as code + 8
        for (std::int64_t i = 0; i < l.group; ++i) codes[i] += 8;
      }
      write_group_codes(l, r, codes, code_bytes);
    }
  }

  int bits_, group_size_;
  bool symmetric_;
};

}  // namespace

void load_f32_row(const Tensor& t, std::int64_t r, float* out) {
  const char* src = static_cast<const char*>(t.data()) +
                    r * t.stride(0) * static_cast<std::int64_t>(t.element_size());
  load_f32(src, t.dtype(), t.stride(1), t.size(1), out);
}

void write_group_codes(const QuantizedLayout& layout, std::int64_t r, const int* codes,
                       std::uint8_t* block_codes) {
  if (layout.bits == 8) {
    for (std::int64_t i = 0; i < layout.group; ++i) {
      block_codes[layout.code_offset(r, i)] = static_cast<std::uint8_t>(codes[i]);
    }
    return;
  }
  const std::int64_t half = layout.group / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    block_codes[layout.code_offset(r, i)] =
        static_cast<std::uint8_t>(codes[i] | (codes[i + half] << 4));
  }
}

std::unique_ptr<Operator> make_quantize_weight(const Problem& problem) {
  return std::make_unique<QuantizeWeightCpu>(problem);
}

}  // namespace tileops::ops::cpu
