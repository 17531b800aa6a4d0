// linear_quantized on CPU. One row of x (decode) streams each thread's share of the tiles once
// through quantized_dots_m1, dequantizing in registers. More rows dequantize a panel of
// kPanelTiles tiles at a time into a small float32 buffer (L2) and run the float32 decode dot
// kernel over it for every chunk of 16 x rows, so the weight is still read from memory once and
// no full-size float copy of it exists.
#include <algorithm>

#include "src/ops/contracts/linear_quantized.decl.h"
#include "src/ops/contracts/quantized_format.h"
#include "src/ops/cpu/gemm/quantize_weight.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "src/ops/cpu/simd/quantized_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kTile = kQuantizedTileRows;
// 12 weight rows per panel: whole groups of the dot kernel's 6 (AVX-512), 4 and 3 (AVX2) rows,
// and 48·K bytes of float32 (192 KiB at K = 4096) that stay in L2 while every x chunk reads them.
constexpr std::int64_t kPanelTiles = 3;
constexpr std::int64_t kChunkRows = 16;  // x rows per call of the dot kernel (its limit)

QuantizedBlocks blocks_of(const QuantizedLayout& l) {
  return {l.bits,       l.has_zeros(),    l.group,      l.groups_per_row,
          l.meta_bytes, l.row_code_bytes, l.block_bytes};
}

class LinearQuantizedCpu final : public Operator {
 public:
  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[tensor_index(decls::linear_quantized, "input")];
    const Tensor& qweight = tensors[tensor_index(decls::linear_quantized, "qweight")];
    const Tensor& bias = tensors[tensor_index(decls::linear_quantized, "bias")];
    const Tensor& out = tensors[tensor_index(decls::linear_quantized, "out")];
    // The contract validated this buffer; it is read again here because the kernels index by it.
    const QuantizedLayout l =
        read_quantized_header("linear_quantized", "qweight", qweight.data(), qweight.numel());
    if (l.k != input.size(-1) || l.n != out.size(-1)) {
      throw_internal_error("linear_quantized", "qweight's header disagrees with the contract's");
    }
    const RowOffsets in_rows(input), out_rows(out);
    const std::int64_t m = in_rows.rows();
    if (m == 0) return;
    ThreadPool& pool = ctx.threads();
    const std::int64_t threads = pool.num_threads();
    const std::int64_t ld_x = (l.k_padded + 15) / 16 * 16 + 16;  // off multiples of 4 KiB
    const std::int64_t ld_out = l.tiles * kTile;
    const std::int64_t ld_panel = ld_x;
    const bool one_row = m == 1;
    const std::int64_t panel_floats = one_row ? 0 : kPanelTiles * kTile * ld_panel;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes(
            {{ld_out}, {m, ld_x}, {m, ld_out}, {threads, ld_out}, {threads, panel_floats}},
            sizeof(float), "linear_quantized: argument 'input': its workspace"));
    float* bias32 = lease.as<float>();
    float* x = bias32 + ld_out;
    float* acc = x + m * ld_x;
    float* scratch = acc + m * ld_out;
    float* panels = scratch + threads * ld_out;
    const bool has_bias = bias.data() != nullptr;
    if (has_bias) load_f32(bias.data(), bias.dtype(), bias.stride(0), l.n, bias32);
    for (std::int64_t i = 0; i < m; ++i) {
      load_f32(element_at(input, in_rows(i)), input.dtype(), input.stride(-1), l.k, x + i * ld_x);
      std::fill(x + i * ld_x + l.k, x + (i + 1) * ld_x, 0.0f);
    }
    const auto* weights = static_cast<const std::uint8_t*>(qweight.data());
    const QuantizedBlocks q = blocks_of(l);
    const bool direct = input.dtype() == DataType::kFloat32 && out.stride(-1) == 1;
    // Rows i of acc for columns [col0, col1) through the epilogue into out.
    const auto store = [&](int chunk, std::int64_t col0, std::int64_t col1) {
      float* row = scratch + chunk * ld_out;
      const std::int64_t cols = std::min(col1, l.n) - col0;
      for (std::int64_t i = 0; i < m; ++i) {
        char* dst = element_at(out, out_rows(i) + col0 * out.stride(-1));
        float* result = direct ? reinterpret_cast<float*>(dst) : row;
        gemm_epilogue_row(acc + i * ld_out + col0, 1.0f, nullptr, 0.0f,
                          has_bias ? bias32 + col0 : nullptr, cols, result);
        if (!direct) store_f32(result, dst, input.dtype(), out.stride(-1), cols);
      }
    };
    if (one_row) {
      pool.parallel_range(l.tiles, 16, [&](int chunk, std::int64_t t0, std::int64_t t1) {
        quantized_dots_m1(x, weights + l.block_offset(t0, 0), t1 - t0, q, acc + t0 * kTile);
        store(chunk, t0 * kTile, t1 * kTile);
      });
      return;
    }
    const std::int64_t num_panels = (l.tiles + kPanelTiles - 1) / kPanelTiles;
    pool.parallel_range(num_panels, 1, [&](int chunk, std::int64_t p0, std::int64_t p1) {
      float* panel = panels + chunk * panel_floats;
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t t0 = p * kPanelTiles, t1 = std::min(l.tiles, t0 + kPanelTiles);
        dequantize_tiles(weights + l.block_offset(t0, 0), t1 - t0, q, panel, ld_panel);
        for (std::int64_t i = 0; i < m; i += kChunkRows) {
          gemm_dot_rows(x + i * ld_x, ld_x, std::min(kChunkRows, m - i), panel, DataType::kFloat32,
                        ld_panel, (t1 - t0) * kTile, l.k_padded, acc + i * ld_out + t0 * kTile,
                        ld_out);
        }
      }
      store(chunk, p0 * kPanelTiles * kTile, std::min(l.tiles, p1 * kPanelTiles) * kTile);
    });
  }
};

}  // namespace

void register_quantized_linear(std::vector<Implementation>& out) {
  out.push_back({"quantize_weight", DeviceType::kCpu, 0, "native", make_quantize_weight});
  out.push_back({"pack_quantized_codes", DeviceType::kCpu, 0, "native", make_pack_quantized_codes});
  out.push_back({"linear_quantized", DeviceType::kCpu, 0, "native",
                 [](const Problem&) { return std::make_unique<LinearQuantizedCpu>(); }});
}

}  // namespace tileops::ops::cpu
