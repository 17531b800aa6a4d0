// Weight-only quantized linear. quantize_weight turns a [N, K] linear weight into int8 (one
// scale per row, or per group of 32/64/128 along K; symmetric) or int4 (groups of 32/64/128,
// symmetric or with zero points) codes in a layout tileops chooses for streaming
// (docs/quantized-weights.md); linear_quantized computes out = input·dequantize(qweight)ᵀ + bias
// with float32 accumulation, dequantizing in registers (no full-size float copy of the weight).
// The buffer carries a header (format, N, K, group) that every use validates.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// Bytes of quantize_weight's output for a [n, k] weight with these attributes (header
// included). Throws InvalidArgument for a combination quantize_weight refuses or a size beyond
// int64.
std::int64_t quantized_weight_bytes(std::int64_t n, std::int64_t k, int bits, int group_size,
                                    bool symmetric);

// weight: [N, K], float32/float16/bfloat16, finite, any strides. bits 8: group_size 0 (per
// channel), 32, 64 or 128, symmetric must be true; bits 4: group_size 32, 64 or 128, symmetric
// (codes -8..7, scale = max|w| / 7) or not (codes 0..15 with a zero point per group). K a
// multiple of a nonzero group_size. qweight: rank 1, contiguous uint8, quantized_weight_bytes
// bytes; written. Deterministic: the same weight gives the same bytes on every target.
void quantize_weight(const Tensor& weight, int bits, int group_size, bool symmetric,
                     const Tensor& qweight, const Context& ctx = {});

class QuantizeWeight {
 public:
  QuantizeWeight(const Tensor& weight, int bits, int group_size, bool symmetric,
                 const Tensor& qweight, int implementation_index = 0);
  void operator()(const Tensor& weight, const Tensor& qweight, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

// Codes quantized elsewhere (a GPTQ/AWQ/compressed-tensors checkpoint) into quantize_weight's
// layout, bit for bit what linear_quantized reads: codes [N, K], bits 4: uint8 0..15 (two per
// byte in the buffer), bits 8: int8; scales [N, K / group_size] ([N, 1] for group_size 0, int8
// only), float32/float16/bfloat16, finite, any strides (a checkpoint's [groups, N] scales pass
// as a transposed view). zeros: undefined (symmetric: the weight is scales · (codes − 8) for
// bits 4, scales · codes for bits 8) or, bits 4 only, [N, K / group_size] finite zero points:
// scales · (codes − zeros). qweight: rank 1, contiguous uint8,
// quantized_weight_bytes(N, K, bits, group_size, zeros undefined) bytes; written. A code out of
// range or a non-finite scale or zero point is refused before anything is written.
void pack_quantized_codes(const Tensor& codes, const Tensor& scales, const Tensor& zeros, int bits,
                          int group_size, const Tensor& qweight, const Context& ctx = {});

class PackQuantizedCodes {
 public:
  PackQuantizedCodes(const Tensor& codes, const Tensor& scales, const Tensor& zeros, int bits,
                     int group_size, const Tensor& qweight, int implementation_index = 0);
  void operator()(const Tensor& codes, const Tensor& scales, const Tensor& zeros,
                  const Tensor& qweight, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

// input: [..., K] (rank >= 1), float32/float16/bfloat16, any strides; qweight: quantize_weight's
// output for an [N, K] weight (its header is validated); bias: [N], any float dtype, or an
// undefined Tensor; out: [..., N], input's dtype, any strides, apart from the inputs.
void linear_quantized(const Tensor& input, const Tensor& qweight, const Tensor& bias,
                      const Tensor& out, const Context& ctx = {});

class LinearQuantized {
 public:
  LinearQuantized(const Tensor& input, const Tensor& qweight, const Tensor& bias, const Tensor& out,
                  int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& qweight, const Tensor& bias, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
