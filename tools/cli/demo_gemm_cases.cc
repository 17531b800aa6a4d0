// `tileops demo` cases of the matrix products: linear with bias (x[tokens, 1024]·W[1024, 1024]ᵀ),
// pack_linear_weight and linear over the packed weight (linear_packed), quantize_weight,
// pack_quantized_codes and linear_quantized (int8 per channel, int4 groups of 128), gemm with
// alpha and beta (trans_b), a batched matmul of 8 heads and scaled_mm (float8_e4m3fn with
// per-token and per-channel scales, vLLM's weight.t() layout). The widths stay near 1024 so the
// float64 reference of the 2048-token case takes about a second.
#include <algorithm>
#include <cmath>
#include <string>

#include "tileops/ops.h"
#include "tools/cli/demo_case.h"

namespace tileops::cli::demo {

namespace ref = testing::reference;

void append_gemm_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                       std::mt19937_64& rng) {
  const std::string tk = std::to_string(tokens);
  {
    constexpr std::int64_t kIn = 1024, kOut = 1024;
    auto x = random({tokens, kIn}, dt, rng), w = random({kOut, kIn}, dt, rng, -0.1, 0.1);
    auto bias = random({kOut}, dt, rng);
    cases.push_back(declared_case(
        "linear", "[" + tk + ", 1024] x [1024, 1024]T + bias", dt, {x, w, bias, nullptr}, {}, -1,
        [=] {
          const ref::Values b = values(bias);
          return ref::linear(values(x), values(w), &b, tokens, kOut, kIn);
        },
        kIn));
  }
  {  // pack_linear_weight, checked through linear_packed; linear_packed over a weight packed here
    constexpr std::int64_t kIn = 1024, kOut = 1024;
    auto x = random({tokens, kIn}, dt, rng), w = random({kOut, kIn}, dt, rng, -0.1, 0.1);
    auto bias = random({kOut}, dt, rng), out = empty({tokens, kOut}, dt);
    const Dims packed_shape{ops::packed_linear_weight_numel(kOut, kIn, dt)};
    auto packed = empty(packed_shape, dt), repacked = empty(packed_shape, dt);
    ops::pack_linear_weight(*w, *packed);
    const auto reference = [=] {
      const ref::Values b = values(bias);
      return ref::linear(values(x), values(w), &b, tokens, kOut, kIn);
    };
    cases.push_back({"pack_linear_weight", "[1024, 1024], then linear_packed", dt,
                     bytes_of({w, repacked}), [=] { ops::pack_linear_weight(*w, *repacked); },
                     [=] {
                       ops::linear_packed(*x, *repacked, *bias, *out);
                       return out;
                     },
                     reference, kIn});
    cases.push_back(declared_case("linear_packed", "[" + tk + ", 1024] x [1024, 1024]T + bias", dt,
                                  {x, packed, bias, out}, {}, -1, reference, kIn));
  }
  // Quantized weights whose values are exactly representable (each group's largest magnitude
  // is 127 or 7 steps of a power-of-two scale), so the float64 reference is linear over them.
  for (const int bits : {8, 4}) {
    constexpr std::int64_t kIn = 1024, kOut = 1024;
    const int group = bits == 8 ? 0 : 128, levels = bits == 8 ? 127 : 7;
    const double step = bits == 8 ? 1.0 / 1024 : 1.0 / 64;
    auto x = random({tokens, kIn}, dt, rng), w = random({kOut, kIn}, dt, rng);
    std::uniform_int_distribution<int> level(-levels, levels);
    ref::Values exact(kOut * kIn);
    for (std::int64_t i = 0; i < kOut * kIn; ++i) {
      exact[i] = (i % 128 == 0 ? levels : level(rng)) * step;
    }
    testing::from_doubles(w->view(), exact);
    auto bias = random({kOut}, dt, rng), out = empty({tokens, kOut}, dt);
    const Dims q_shape{ops::quantized_weight_bytes(kOut, kIn, bits, group, true)};
    auto q = empty(q_shape, DataType::kUInt8), requantized = empty(q_shape, DataType::kUInt8);
    ops::quantize_weight(*w, bits, group, true, *q);
    const auto reference = [=] {
      const ref::Values b = values(bias);
      return ref::linear(values(x), values(w), &b, tokens, kOut, kIn);
    };
    const std::string format = bits == 8 ? "int8 per channel" : "int4 groups of 128";
    cases.push_back({"quantize_weight", "[1024, 1024] " + format + ", then linear_quantized", dt,
                     bytes_of({w, requantized}),
                     [=] { ops::quantize_weight(*w, bits, group, true, *requantized); },
                     [=] {
                       ops::linear_quantized(*x, *requantized, *bias, *out);
                       return out;
                     },
                     reference, kIn});
    if (bits == 4) {
      // The same weights as a checkpoint's codes (level + 8) and scales (the step) that
      // pack_quantized_codes writes into the buffer linear_quantized reads.
      auto codes = empty({kOut, kIn}, DataType::kUInt8);
      auto scales = empty({kOut, kIn / group}, DataType::kFloat32);
      auto packed = empty(q_shape, DataType::kUInt8);
      auto* c = static_cast<std::uint8_t*>(codes->data());
      for (std::int64_t i = 0; i < kOut * kIn; ++i) {
        c[i] = static_cast<std::uint8_t>(std::lround(exact[i] / step) + 8);
      }
      std::fill_n(scales->view().data_as<float>(), kOut * kIn / group, static_cast<float>(step));
      cases.push_back(
          {"pack_quantized_codes", "[1024, 1024] int4 codes, then linear_quantized", dt,
           bytes_of({codes, scales, packed}),
           [=] { ops::pack_quantized_codes(*codes, *scales, Tensor(), 4, group, *packed); },
           [=] {
             ops::linear_quantized(*x, *packed, *bias, *out);
             return out;
           },
           reference, kIn});
    }
    std::string shape = "[" + tk;
    shape.append(", 1024] x ").append(format).append(" [1024, 1024]T + bias");
    cases.push_back(declared_case("linear_quantized", shape, dt, {x, q, bias, nullptr}, {}, -1,
                                  reference, kIn));
  }
  {
    constexpr std::int64_t kK = 512, kN = 512;
    auto a = random({tokens, kK}, dt, rng), b = random({kN, kK}, dt, rng, -0.1, 0.1);
    auto c = random({tokens, kN}, dt, rng);
    const ref::Values c0 = values(c);  // beta·c reads the values from before the first run
    cases.push_back(declared_case(
        "gemm", "0.5 [" + tk + ", 512] x [512, 512]T + c", dt, {a, b, c}, {0.5, 1.0, 0, 1}, -1,
        [=] {
          ref::Values y =
              ref::matmul(values(a), {tokens, kK}, false, values(b), {kN, kK}, true, {tokens, kN});
          for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.5 * y[i] + c0[i];
          return y;
        },
        kK));
  }
  {  // scaled_mm: x and W as e4m3 codes, out = scale_x[i] * scale_w[j] * (x . W[j]) + bias
    constexpr std::int64_t kIn = 1024, kOut = 1024;
    constexpr DataType kE4M3 = DataType::kFloat8E4M3FN;
    auto x = random({tokens, kIn}, kE4M3, rng, -8, 8), w = random({kOut, kIn}, kE4M3, rng, -8, 8);
    auto sx = random({tokens, 1}, DataType::kFloat32, rng, 0.01, 0.1);
    auto sw = random({kOut, 1}, DataType::kFloat32, rng, 0.001, 0.01);
    auto bias = random({kOut}, dt, rng), out = empty({tokens, kOut}, dt);
    cases.push_back(
        {"scaled_mm", "e4m3 [" + tk + ", 1024] x [1024, 1024]T, per token/channel + bias", dt,
         bytes_of({x, w, sx, sw, bias, out}),
         [=] { ops::scaled_mm(*x, w->view().transpose(0, 1), *sx, *sw, *bias, *out); },
         [=] { return out; },
         [=] {
           ref::Values y = ref::linear(values(x), values(w), nullptr, tokens, kOut, kIn);
           const ref::Values s_x = values(sx), s_w = values(sw), b = values(bias);
           for (std::int64_t i = 0; i < tokens; ++i) {
             for (std::int64_t j = 0; j < kOut; ++j) {
               y[i * kOut + j] = s_x[i] * s_w[j] * y[i * kOut + j] + b[j];
             }
           }
           return y;
         },
         kIn});
  }
  {
    constexpr std::int64_t kBatch = 8, kK = 128, kN = 128;
    auto a = random({kBatch, tokens, kK}, dt, rng),
         b = random({kBatch, kK, kN}, dt, rng, -0.1, 0.1);
    cases.push_back(declared_case(
        "matmul", "8 x [" + tk + ", 128] x [128, 128]", dt, {a, b, nullptr}, {0, 0}, -1,
        [=] {
          return ref::matmul(values(a), {kBatch, tokens, kK}, false, values(b), {kBatch, kK, kN},
                             false, {kBatch, tokens, kN});
        },
        kK));
  }
}

}  // namespace tileops::cli::demo
