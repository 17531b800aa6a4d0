#include "examples/llama/int4_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "examples/llama/json_number.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/ops/cast.h"
#include "tileops/ops/quantized_linear.h"

namespace tileops::llama {
namespace {

// AWQ's GEMM packing puts column 8w + kAwqOrder[i] of word w's 8 columns into its nibble i
// (AutoAWQ, awq/utils/packing_utils.py: AWQ_ORDER).
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

[[noreturn]] void fail_config(const std::string& file, std::string_view key,
                              const std::string& expected, const std::string& got) {
  throw Error(ErrorKind::kInvalidArgument, "llama config " + file +
                                               ": field 'quantization_config." + std::string(key) +
                                               "': expected " + expected + ", got " + got);
}

// Element [r, c] of a 2-D int32 tensor, read bytewise (safetensors does not align tensors).
std::uint32_t word(const Tensor& t, std::int64_t r, std::int64_t c) {
  std::uint32_t v;
  std::memcpy(&v, static_cast<const char*>(t.data()) + (r * t.stride(0) + c * t.stride(1)) * 4, 4);
  return v;
}

void expect_tensor(const Tensor& t, const std::string& name, DataType dtype, const Dims& shape) {
  if (!t.defined()) {
    throw Error(ErrorKind::kInvalidArgument, "llama checkpoint: tensor '" + name + "' is missing");
  }
  // Scales (asked as float16) may be any of the float dtypes the model runs in.
  const bool float_scales = dtype == DataType::kFloat16 &&
                            (t.dtype() == DataType::kFloat32 || t.dtype() == DataType::kBFloat16);
  if (t.dtype() != dtype && !float_scales) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama checkpoint", name,
                         dtype == DataType::kInt32 ? "int32" : "float16, bfloat16 or float32",
                         std::string(name_of(t.dtype())));
  }
  if (!(t.shape() == shape)) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama checkpoint", name,
                         "shape " + shape.to_string(), t.shape().to_string());
  }
}

// One linear's codes, scales and zero points into rows [row0, row0 + n) of the stacked ones.
void unpack(const Int4Quantization& q, const Int4Linear& p, std::int64_t k, std::int64_t row0,
            std::uint8_t* codes, float* scales, float* zeros) {
  const std::int64_t n = p.n, groups = k / q.group_size;
  const bool gptq = q.method == Int4Method::kGptq;
  const std::string& m = p.name;
  if (gptq) {
    expect_tensor(p.qweight, m + ".qweight", DataType::kInt32, {k / 8, n});
  } else {
    expect_tensor(p.qweight, m + ".qweight", DataType::kInt32, {k, n / 8});
  }
  expect_tensor(p.qzeros, m + ".qzeros", DataType::kInt32, {groups, n / 8});
  expect_tensor(p.scales, m + ".scales", DataType::kFloat16, {groups, n});
  if (k % 8 != 0 || n % 8 != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama checkpoint: " + m + ": int4 packing needs K and N multiples of 8");
  }
  if (gptq && p.g_idx.defined()) {
    expect_tensor(p.g_idx, m + ".g_idx", DataType::kInt32, {k});
    for (std::int64_t i = 0; i < k; ++i) {
      std::int32_t g;
      std::memcpy(&g, static_cast<const char*>(p.g_idx.data()) + i * p.g_idx.stride(0) * 4, 4);
      if (g != i / q.group_size) {
        throw Error(ErrorKind::kInvalidArgument,
                    "llama checkpoint: " + m + ".g_idx: act-order (desc_act) is not supported: " +
                        "g_idx[" + std::to_string(i) + "] = " + std::to_string(g) + ", not " +
                        std::to_string(i / q.group_size) + " = k / group_size");
      }
    }
  }
  for (std::int64_t kw = 0; kw < p.qweight.size(0); ++kw) {
    for (std::int64_t cw = 0; cw < p.qweight.size(1); ++cw) {
      const std::uint32_t w = word(p.qweight, kw, cw);
      for (int i = 0; i < 8; ++i) {
        const auto code = static_cast<std::uint8_t>((w >> (4 * i)) & 15);
        // GPTQ: K runs along the word's nibbles; AWQ: N does, in its interleaved order.
        if (gptq) {
          codes[(row0 + cw) * k + kw * 8 + i] = code;
        } else {
          codes[(row0 + cw * 8 + kAwqOrder[i]) * k + kw] = code;
        }
      }
    }
  }
  TensorStorage s({groups, n}, DataType::kFloat32);
  TensorStorage copy(p.scales.shape(), p.scales.dtype());  // aligned for the cast
  std::memcpy(copy.data(), p.scales.data(), copy.bytes());
  ops::cast(copy, s);
  const float* sv = s.view().data_as<float>();
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t cw = 0; cw < n / 8; ++cw) {
      const std::uint32_t w = word(p.qzeros, g, cw);
      for (int i = 0; i < 8; ++i) {
        const std::int64_t col = cw * 8 + (gptq ? i : kAwqOrder[i]);
        const auto z = static_cast<float>(((w >> (4 * i)) & 15) + (gptq ? q.zero_offset : 0));
        zeros[(row0 + col) * groups + g] = z;
        scales[(row0 + col) * groups + g] = sv[g * n + col];
      }
    }
  }
}

}  // namespace

std::optional<Int4Quantization> parse_quantization_config(std::string_view text,
                                                          const std::string& file_name) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;  // parse_config_json reports a bad file
  const auto it = j.find("quantization_config");
  if (it == j.end() || it->is_null()) return std::nullopt;
  const nlohmann::json& c = *it;
  if (!c.is_object()) fail_config(file_name, "", "an object", json_excerpt(c));
  const auto text_of = [&](const char* key) -> std::string {
    const auto f = c.find(key);
    if (f == c.end() || f->is_null()) return {};
    if (!f->is_string()) fail_config(file_name, key, "a string", json_excerpt(*f));
    return f->get<std::string>();
  };
  // The first of `keys` present, as an integer.
  const auto integer_of = [&](std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      const auto f = c.find(key);
      if (f == c.end() || f->is_null()) continue;
      const std::optional<std::int64_t> v = json_int64(*f);
      if (!v) fail_config(file_name, key, "an integer", json_excerpt(*f));
      return std::pair{std::string(key), *v};
    }
    fail_config(file_name, *keys.begin(), "an integer", "nothing (the field is required)");
  };
  Int4Quantization q;
  const std::string method = text_of("quant_method");
  if (method != "gptq" && method != "awq") {
    fail_config(file_name, "quant_method", "\"gptq\" or \"awq\"", "\"" + method + "\"");
  }
  q.method = method == "gptq" ? Int4Method::kGptq : Int4Method::kAwq;
  const auto [bits_key, bits] = integer_of({"bits", "w_bit"});
  if (bits != 4) fail_config(file_name, bits_key, "4 (int4 only)", std::to_string(bits));
  const auto [group_key, group] = integer_of({"group_size", "q_group_size"});
  if (group != 32 && group != 64 && group != 128) {
    fail_config(file_name, group_key, "32, 64 or 128 (int4 runs in groups along K)",
                std::to_string(group));
  }
  q.group_size = static_cast<int>(group);
  if (q.method == Int4Method::kGptq) {
    const std::string format = text_of("checkpoint_format");
    if (!format.empty() && format != "gptq" && format != "gptq_v2") {
      fail_config(file_name, "checkpoint_format", "\"gptq\" or \"gptq_v2\"", "\"" + format + "\"");
    }
    q.zero_offset = format == "gptq_v2" ? 0 : 1;
  } else {
    std::string version = text_of("version");
    std::transform(version.begin(), version.end(), version.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (!version.empty() && version != "gemm") {
      fail_config(file_name, "version", "\"gemm\" (the GEMV layouts are not supported)",
                  "\"" + version + "\"");
    }
    q.zero_offset = 0;
  }
  return q;
}

TensorStorage convert_int4(const Int4Quantization& q, const std::vector<Int4Linear>& parts,
                           std::int64_t k) {
  if (k % q.group_size != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama checkpoint: " + parts.front().name + ": K = " + std::to_string(k) +
                    " is not a multiple of group_size " + std::to_string(q.group_size));
  }
  const std::int64_t groups = k / q.group_size;
  std::int64_t n = 0;
  for (const Int4Linear& p : parts) n = checked_add(n, p.n, "llama checkpoint " + p.name);
  TensorStorage codes({n, k}, DataType::kUInt8);
  TensorStorage scales({n, groups}, DataType::kFloat32), zeros({n, groups}, DataType::kFloat32);
  std::int64_t row = 0;
  for (const Int4Linear& p : parts) {
    unpack(q, p, k, row, static_cast<std::uint8_t*>(codes.data()), scales.view().data_as<float>(),
           zeros.view().data_as<float>());
    row += p.n;
  }
  const float* z = zeros.view().data_as<float>();
  const bool symmetric = std::all_of(z, z + n * groups, [](float v) { return v == 8.0f; });
  TensorStorage out({ops::quantized_weight_bytes(n, k, 4, q.group_size, symmetric)},
                    DataType::kUInt8);
  ops::pack_quantized_codes(codes, scales, symmetric ? Tensor() : zeros.view(), 4, q.group_size,
                            out);
  return out;
}

}  // namespace tileops::llama
