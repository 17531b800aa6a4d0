// GPTQ and AWQ int4 checkpoints (Hugging Face safetensors: per linear `qweight`, `qzeros`,
// `scales` and, GPTQ, `g_idx`), converted at load into ops::pack_quantized_codes's buffer. The
// bit layouts, with their sources, are in docs/quantized-weights.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tileops/core/tensor.h"
#include "tileops/core/tensor_storage.h"

namespace tileops::llama {

enum class Int4Method { kGptq, kAwq };

// config.json's `quantization_config`, checked.
struct Int4Quantization {
  Int4Method method = Int4Method::kGptq;
  int group_size = 128;
  // GPTQ's v1 format ("checkpoint_format": "gptq", the default) stores zero points minus 1;
  // "gptq_v2" stores them as they are. AWQ never offsets them.
  int zero_offset = 1;
};

// The `quantization_config` of a config.json text (named `file_name` in errors), or nullopt
// when it has none. Accepted: quant_method "gptq" (bits 4, group_size 32/64/128, any sym and
// desc_act: act-order is judged from each g_idx; checkpoint_format "gptq" or "gptq_v2") or
// "awq" (bits / w_bit 4, group_size / q_group_size 32/64/128, version "gemm", zero_point any).
// Anything else (another method, bits or group size, AWQ's gemv layouts) is an error naming
// the field.
std::optional<Int4Quantization> parse_quantization_config(std::string_view text,
                                                          const std::string& file_name);

// One linear of the checkpoint: [K, N] logically, packed as its method ships it.
struct Int4Linear {
  std::string name;  // e.g. model.layers.0.self_attn.q_proj (for errors)
  Tensor qweight, qzeros, scales;
  Tensor g_idx;  // GPTQ, optional
  std::int64_t n = 0;
};

// The quantized buffer of the linears stacked along N (q/k/v, gate/up), all of input size k.
// Shapes and dtypes are checked against the method's layout, naming the tensor: GPTQ qweight
// int32 [K/8, N], qzeros int32 [K/G, N/8], scales float [K/G, N], g_idx int32 [K] equal to
// k / G (act-order, any other g_idx, is refused: our groups are contiguous along K); AWQ
// qweight int32 [K, N/8], qzeros int32 [K/G, N/8], scales float [K/G, N]. When every zero point
// is 8 the buffer is the symmetric format (GPTQ's sym = true), else it carries zero points.
TensorStorage convert_int4(const Int4Quantization& q, const std::vector<Int4Linear>& parts,
                           std::int64_t k);

}  // namespace tileops::llama
