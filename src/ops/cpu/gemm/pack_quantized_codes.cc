// pack_quantized_codes on CPU: codes, scales and zero points quantized elsewhere, written into
// the layout quantize_weight writes (src/ops/contracts/quantized_format.h), padding included,
// so that the same numbers give the same bytes whichever operator wrote them. A one-time pass
// at load: checked first (codes in range, scales and zero points finite), then written.
#include "src/ops/cpu/gemm/quantize_weight.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "src/ops/contracts/pack_quantized_codes.decl.h"
#include "src/ops/contracts/quantized_format.h"
#include "src/ops/cpu/simd/convert.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kTile = kQuantizedTileRows;

// Row r of the codes as ints (uint8 0..255 or int8 -128..127).
void load_codes(const Tensor& codes, std::int64_t r, int* out) {
  const auto* base = static_cast<const std::uint8_t*>(codes.data()) + r * codes.stride(0);
  const bool is_signed = codes.dtype() == DataType::kInt8;
  for (std::int64_t c = 0; c < codes.size(1); ++c) {
    const std::uint8_t byte = base[c * codes.stride(1)];
    out[c] = is_signed ? static_cast<std::int8_t>(byte) : byte;
  }
}

class PackQuantizedCodesCpu final : public Operator {
 public:
  explicit PackQuantizedCodesCpu(const Problem& p)
      : bits_(static_cast<int>(p.attributes[attribute_index(decls::pack_quantized_codes, "bits")])),
        group_size_(static_cast<int>(
            p.attributes[attribute_index(decls::pack_quantized_codes, "group_size")])) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& codes = tensors[tensor_index(decls::pack_quantized_codes, "codes")];
    const Tensor& scales = tensors[tensor_index(decls::pack_quantized_codes, "scales")];
    const Tensor& zeros = tensors[tensor_index(decls::pack_quantized_codes, "zeros")];
    auto* dst = static_cast<std::uint8_t*>(
        tensors[tensor_index(decls::pack_quantized_codes, "qweight")].data());
    const bool has_zeros = zeros.data() != nullptr;
    const QuantizedLayout l = quantized_layout("pack_quantized_codes", codes.size(0), codes.size(1),
                                               bits_, group_size_, !has_zeros);
    const std::int64_t groups = scales.size(1);
    ThreadPool& pool = ctx.threads();
    check_values(l, codes, scales, zeros, pool);
    write_quantized_header(l, dst);
    pool.parallel_range(l.tiles, 1, [&](int, std::int64_t t0, std::int64_t t1) {
      std::vector<int> row_codes(static_cast<std::size_t>(kTile * l.k_padded));
      std::vector<float> row_scales(static_cast<std::size_t>(kTile * groups));
      std::vector<float> row_zeros(static_cast<std::size_t>(kTile * groups));
      for (std::int64_t t = t0; t < t1; ++t) {
        // Padding as quantize_weight writes it: scale 0, zero point 0, the code of a 0 weight.
        std::fill(row_codes.begin(), row_codes.end(), bits_ == 4 && !has_zeros ? 8 : 0);
        std::fill(row_scales.begin(), row_scales.end(), 0.0f);
        std::fill(row_zeros.begin(), row_zeros.end(), 0.0f);
        for (std::int64_t r = 0; r < kTile && t * kTile + r < l.n; ++r) {
          load_codes(codes, t * kTile + r, row_codes.data() + r * l.k_padded);
          load_f32_row(scales, t * kTile + r, row_scales.data() + r * groups);
          if (has_zeros) load_f32_row(zeros, t * kTile + r, row_zeros.data() + r * groups);
        }
        for (std::int64_t g = 0; g < l.groups_per_row; ++g) {
          std::uint8_t* block = dst + l.block_offset(t, g);
          for (std::int64_t r = 0; r < kTile; ++r) {
            std::memcpy(block + r * 4, &row_scales[r * groups + g], 4);
            if (has_zeros) std::memcpy(block + (kTile + r) * 4, &row_zeros[r * groups + g], 4);
            write_group_codes(l, r, row_codes.data() + r * l.k_padded + g * l.group,
                              block + l.meta_bytes);
          }
        }
      }
    });
  }

 private:
  // Every code in range for its format and every scale and zero point finite, before anything
  // is written: a bad checkpoint is an error naming the argument, not a wrong weight.
  void check_values(const QuantizedLayout& l, const Tensor& codes, const Tensor& scales,
                    const Tensor& zeros, ThreadPool& pool) const {
    std::atomic<int> bad{0};  // 1 codes, 2 scales, 3 zeros
    pool.parallel_range(l.n, 16, [&](int, std::int64_t r0, std::int64_t r1) {
      std::vector<int> c(static_cast<std::size_t>(l.k));
      std::vector<float> f(static_cast<std::size_t>(scales.size(1)));
      const auto finite = [&] {
        return std::all_of(f.begin(), f.end(), [](float v) { return std::isfinite(v); });
      };
      for (std::int64_t r = r0; r < r1 && bad.load(std::memory_order_relaxed) == 0; ++r) {
        load_codes(codes, r, c.data());
        if (bits_ == 4 && std::any_of(c.begin(), c.end(), [](int v) { return v > 15; })) bad = 1;
        load_f32_row(scales, r, f.data());
        if (!finite()) bad = 2;
        if (zeros.data() != nullptr) {
          load_f32_row(zeros, r, f.data());
          if (!finite()) bad = 3;
        }
      }
    });
    if (bad == 1) {
      throw_argument_error(ErrorKind::kInvalidArgument, "pack_quantized_codes", "codes",
                           "codes 0..15 for bits = 4", "a code above 15");
    }
    if (bad != 0) {
      throw_argument_error(ErrorKind::kInvalidArgument, "pack_quantized_codes",
                           bad == 2 ? "scales" : "zeros", "finite values", "a NaN or infinity");
    }
  }

  int bits_, group_size_;
};

}  // namespace

std::unique_ptr<Operator> make_pack_quantized_codes(const Problem& problem) {
  return std::make_unique<PackQuantizedCodesCpu>(problem);
}

}  // namespace tileops::ops::cpu
