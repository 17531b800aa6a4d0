// pack_linear_weight and linear_packed on CPU. The packed layout: K in blocks of kBlockK; within
// a block, groups of 16 weight rows; within a group, K steps of 16 rows × `pair` elements (pairs
// for bfloat16's dot-product instruction, single elements otherwise), zero-padded to 16 rows and
// to whole pairs. A thread's share of groups is then one sequential stream per K block, read
// against 16 rows of x held in L1 (x's rows are the lanes; see packed_linear_kernels.h), or, for
// a few rows of x, against those rows with the weight rows as the lanes (packed_rows_block).
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>

#include "src/ops/contracts/linear_packed.decl.h"
#include "src/ops/contracts/pack_linear_weight.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "src/ops/cpu/simd/packed_linear_kernels.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/ops/packed_linear.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kRows = 16;  // weight rows per group, x rows per chunk
// K per block: 16 x rows of a block take 8 KiB (bfloat16) or 16 KiB (float32) of L1
// (bench/results/cpu-tuning.md).
constexpr std::int64_t kBlockK = 256;
// Groups per batch over which the chunks of more than 16 x rows take turns, so that a batch's
// blocks are reused from L2.
constexpr std::int64_t kBatchBytes = 256 * 1024;

struct Geometry {
  std::int64_t n, k, groups, k_padded, blocks, pair;

  Geometry(std::int64_t n_, std::int64_t k_, DataType dtype)
      : n(n_), k(k_), groups(ceil_div(n_, kRows)) {
    pair = dtype == DataType::kBFloat16 ? 2 : 1;
    k_padded = ceil_div(k, pair) * pair;  // k + 1 was checked for a non-empty weight
    blocks = ceil_div(k_padded, kBlockK);
  }
  std::int64_t block_k(std::int64_t kb) const { return std::min(kBlockK, k_padded - kb * kBlockK); }
  // Element offset of group g's part of K block kb.
  std::int64_t block_offset(std::int64_t kb, std::int64_t g) const {
    return kb * kBlockK * groups * kRows + g * kRows * block_k(kb);
  }
};

// Written in order (K step, row, element of the pair), the 16 source rows read as streams.
template <class T>
void pack_groups(const Tensor& weight, T* packed, const Geometry& geo, std::int64_t g0,
                 std::int64_t g1) {
  const T* w = weight.data_as<const T>();
  const std::int64_t rs = weight.stride(0), cs = weight.stride(1), pair = geo.pair;
  for (std::int64_t g = g0; g < g1; ++g) {
    const std::int64_t rows = std::min(kRows, geo.n - g * kRows);  // the rest are zeros
    for (std::int64_t kb = 0; kb < geo.blocks; ++kb) {
      T* dst = packed + geo.block_offset(kb, g);
      const std::int64_t len = geo.block_k(kb), col0 = kb * kBlockK;
      const std::int64_t live = std::min(len, geo.k - col0);  // columns before the pad
      const T* src = w + g * kRows * rs + col0 * cs;
      std::int64_t kk = 0;
      for (; kk + pair <= live; kk += pair) {
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t t = 0; t < pair; ++t) *dst++ = src[r * rs + (kk + t) * cs];
        }
        for (std::int64_t r = rows; r < kRows; ++r) {
          for (std::int64_t t = 0; t < pair; ++t) *dst++ = T{};
        }
      }
      for (; kk < len; kk += pair) {  // the last pair of an odd K
        for (std::int64_t r = 0; r < kRows; ++r) {
          for (std::int64_t t = 0; t < pair; ++t) {
            *dst++ = r < rows && kk + t < live ? src[r * rs + (kk + t) * cs] : T{};
          }
        }
      }
    }
  }
}

class PackLinearWeightCpu final : public Operator {
 public:
  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& weight = tensors[tensor_index(decls::pack_linear_weight, "weight")];
    // An empty weight packs nothing (its other extent is unchecked: up to INT64_MAX), and
    // walking N's groups (up to 2^59 of them) for an empty K would only take time.
    if (weight.numel() == 0) return;
    const Geometry geo(weight.size(0), weight.size(1), weight.dtype());
    void* packed = tensors[tensor_index(decls::pack_linear_weight, "packed")].data();
    ctx.threads().parallel_range(geo.groups, 1, [&](int, std::int64_t g0, std::int64_t g1) {
      if (weight.element_size() == 4) {
        pack_groups(weight, static_cast<std::uint32_t*>(packed), geo, g0, g1);
      } else {
        pack_groups(weight, static_cast<std::uint16_t*>(packed), geo, g0, g1);
      }
    });
  }
};

// Carves 64-byte aligned regions out of one workspace lease. Sizes are checked: broadcast
// inputs make M and K as large as int64 allows, and a wrapped size would under-allocate.
class Carve {
 public:
  explicit Carve(std::string_view what) : what_(what) {}
  // Offset of a region of the product of `factors` elements of `element_size` bytes.
  std::int64_t take(std::initializer_list<std::int64_t> factors, std::size_t element_size) {
    const std::int64_t at = used_;
    const std::int64_t bytes = checked_bytes(
        checked_product(std::span<const std::int64_t>(factors.begin(), factors.size()), what_),
        element_size, what_);
    used_ = checked_add(used_, checked_add(bytes, 63, what_) / 64 * 64, what_);
    return at;
  }
  std::int64_t bytes() const { return used_; }
  std::string_view what() const { return what_; }

 private:
  std::string_view what_;
  std::int64_t used_ = 0;
};

class LinearPackedCpu final : public Operator {
 public:
  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[tensor_index(decls::linear_packed, "input")];
    const Tensor& packed = tensors[tensor_index(decls::linear_packed, "packed")];
    const Tensor& bias = tensors[tensor_index(decls::linear_packed, "bias")];
    const Tensor& out = tensors[tensor_index(decls::linear_packed, "out")];
    const RowOffsets in_rows(input), out_rows(out);
    const std::int64_t m = in_rows.rows(), n = out.size(-1);
    if (m == 0 || n == 0) return;
    const DataType dtype = input.dtype();
    const Geometry geo(n, input.size(-1), dtype);
    if (m <= packed_rows_path_max()) return run_rows(tensors, in_rows, out_rows, geo, m, ctx);
    // bfloat16 x stays bfloat16 for the dot-product instruction; otherwise x is float32 and
    // float16 or bfloat16 weight blocks are widened into L1 before use.
    const bool dp = dtype == DataType::kBFloat16 && dpbf16_enabled();
    const std::size_t x_size = dp ? 2 : 4;
    Carve carve("linear_packed: argument 'input': its workspace");
    const std::int64_t chunks = ceil_div(m, kRows);
    const std::int64_t ld_row =  // off multiples of 4 KiB
        checked_add(checked_mul(ceil_div(geo.k_padded, 32), 32, carve.what()), 32, carve.what());
    const std::int64_t ld_out = geo.groups * kRows;
    ThreadPool& pool = ctx.threads();
    const int threads = pool.num_threads();

    const std::int64_t rows_at = carve.take({chunks, kRows, ld_row}, x_size);
    const std::int64_t xp_at = carve.take({chunks, geo.k_padded, kRows}, x_size);
    const std::int64_t acc_at = carve.take({chunks, ld_out, kRows}, sizeof(float));
    const std::int64_t bias_at = carve.take({ld_out}, sizeof(float));
    const std::int64_t result_at = carve.take({kRows, ld_out}, sizeof(float));
    const std::int64_t per_thread_floats = ld_out + kBlockK * kRows;
    const std::int64_t per_thread = per_thread_floats * static_cast<std::int64_t>(sizeof(float));
    const std::int64_t thread_at = carve.take({threads, per_thread_floats}, sizeof(float));
    WorkspacePool::Lease lease =
        ctx.workspace().acquire(kCpu, ctx.stream, 0, static_cast<std::size_t>(carve.bytes()));
    char* base = lease.as<char>();
    char* rows = base + rows_at;
    char* xp = base + xp_at;
    auto* acc = reinterpret_cast<float*>(base + acc_at);
    float* bias32 = bias.data() != nullptr ? reinterpret_cast<float*>(base + bias_at) : nullptr;
    auto* result = reinterpret_cast<float*>(base + result_at);
    if (bias32 != nullptr) load_f32(bias.data(), bias.dtype(), bias.stride(0), n, bias32);

    // x: each row copied contiguous and zero-padded, then every 16 rows transposed so that a K
    // step (or pair) of all 16 is one vector; the chunks of 16 rows split over the threads.
    const std::int64_t units = dp ? geo.k_padded / 2 : geo.k_padded;  // 32-bit units per row
    pool.parallel_range(chunks, 1, [&](int, std::int64_t c0, std::int64_t c1) {
      for (std::int64_t c = c0; c < c1; ++c) {
        const float* row_ptrs[kRows];
        for (std::int64_t r = 0; r < kRows; ++r) {
          const std::int64_t i = c * kRows + r;
          char* row = rows + i * ld_row * x_size;
          row_ptrs[r] = reinterpret_cast<const float*>(row);
          std::int64_t done = 0;
          if (i < m) {
            const char* src = element_at(input, in_rows(i));
            if (dp && input.stride(-1) == 1) {
              std::memcpy(row, src, geo.k * 2);
            } else if (dp) {
              for (std::int64_t p = 0; p < geo.k; ++p) {
                std::memcpy(row + p * 2, src + p * input.stride(-1) * 2, 2);
              }
            } else {
              load_f32(src, dtype, input.stride(-1), geo.k, reinterpret_cast<float*>(row));
            }
            done = geo.k;
          }
          std::memset(row + done * x_size, 0, (geo.k_padded - done) * x_size);
        }
        gemm_transpose_rows(row_ptrs, kRows, units,
                            reinterpret_cast<float*>(xp + c * geo.k_padded * kRows * x_size),
                            kRows);
      }
    });

    const std::size_t w_size = input.element_size();
    const std::int64_t batch = std::max<std::int64_t>(
        1, kBatchBytes / (kRows * kBlockK * static_cast<std::int64_t>(w_size)));
    const char* weights = static_cast<const char*>(packed.data());
    const bool direct = dtype == DataType::kFloat32 && out.stride(-1) == 1;
    // acc0 (and acc1 when x1 is given) over one K block of a group; `widened` holds a float32
    // copy of a float16 or (without AVX512-BF16) bfloat16 block.
    const auto run_block = [&](const char* x0, const char* x1, const char* w, std::int64_t len,
                               float* acc0, float* acc1, bool accumulate, bool fetch,
                               float* widened) {
      if (dp) {
        const auto* wb = reinterpret_cast<const std::uint16_t*>(w);
        const auto* xb0 = reinterpret_cast<const std::uint16_t*>(x0);
        if (x1 == nullptr) {
          return dpbf16_packed_block(xb0, wb, len / 2, acc0, accumulate, fetch);
        }
        const auto* xb1 = reinterpret_cast<const std::uint16_t*>(x1);
        for (std::int64_t h = 0; h < 2; ++h) {
          dpbf16_packed_half_blocks(xb0, xb1, wb + 16 * h, len / 2, acc0 + 128 * h, acc1 + 128 * h,
                                    accumulate, fetch && h == 0);
        }
        return;
      }
      const float* wf = reinterpret_cast<const float*>(w);
      if (dtype != DataType::kFloat32) {
        unpack_block_f32(w, dtype, len, widened);
        wf = widened;
        fetch = false;
      }
      const auto* xf0 = reinterpret_cast<const float*>(x0);
      if (x1 == nullptr) return packed_block_f32(xf0, wf, len, acc0, accumulate, fetch);
      const auto* xf1 = reinterpret_cast<const float*>(x1);
      for (std::int64_t h = 0; h < 2; ++h) {
        packed_half_blocks_f32(xf0, xf1, wf + 8 * h, len, acc0 + 128 * h, acc1 + 128 * h,
                               accumulate, fetch && h == 0);
      }
    };
    pool.parallel_range(geo.groups, 1, [&](int chunk, std::int64_t g0, std::int64_t g1) {
      auto* scratch = reinterpret_cast<float*>(base + thread_at + chunk * per_thread);
      float* widened = scratch + ld_out;
      if (geo.blocks == 0) {
        for (std::int64_t c = 0; c < chunks; ++c) {
          std::fill(acc + (c * geo.groups + g0) * kRows * kRows,
                    acc + (c * geo.groups + g1) * kRows * kRows, 0.0f);
        }
      }
      for (std::int64_t kb = 0; kb < geo.blocks; ++kb) {
        const std::int64_t len = geo.block_k(kb);
        for (std::int64_t b0 = g0; b0 < g1; b0 += batch) {
          const std::int64_t b1 = std::min(g1, b0 + batch);
          // Chunks of x rows two at a time (half the broadcasts per product), the last alone.
          for (std::int64_t c = 0; c < chunks; c += 2) {
            const bool two = c + 1 < chunks;
            const auto x_of = [&](std::int64_t chunk) {
              return xp + (chunk * geo.k_padded + kb * kBlockK) * kRows * x_size;
            };
            for (std::int64_t g = b0; g < b1; ++g) {
              const char* w = weights + geo.block_offset(kb, g) * w_size;
              float* a0 = acc + (c * geo.groups + g) * kRows * kRows;
              float* a1 = two ? acc + ((c + 1) * geo.groups + g) * kRows * kRows : nullptr;
              const bool fetch = c == 0;  // later chunks find the batch in L2
              run_block(x_of(c), two ? x_of(c + 1) : nullptr, w, len, a0, a1, kb > 0, fetch,
                        widened);
            }
          }
        }
      }
      // Back to rows: each group's 16 × 16 results transposed, then the epilogue row by row.
      const std::int64_t col0 = g0 * kRows, cols = std::min(g1 * kRows, n) - col0;
      for (std::int64_t c = 0; c < chunks; ++c) {
        for (std::int64_t g = g0; g < g1; ++g) {
          const float* tile[kRows];
          for (std::int64_t j = 0; j < kRows; ++j) {
            tile[j] = acc + ((c * geo.groups + g) * kRows + j) * kRows;
          }
          gemm_transpose_rows(tile, kRows, kRows, result + g * kRows, ld_out);
        }
        for (std::int64_t i = c * kRows; i < std::min(m, (c + 1) * kRows); ++i) {
          char* dst = element_at(out, out_rows(i) + col0 * out.stride(-1));
          float* row = direct ? reinterpret_cast<float*>(dst) : scratch;
          gemm_epilogue_row(result + (i - c * kRows) * ld_out + col0, 1.0f, nullptr, 0.0f,
                            bias32 != nullptr ? bias32 + col0 : nullptr, cols, row);
          if (!direct) store_f32(row, dst, dtype, out.stride(-1), cols);
        }
      }
    });
  }

 private:
  // A few rows of x (decode): each converted to float32 once, then every weight block read once
  // per packed_rows_pass_max() rows against them, the results accumulated as rows of `acc`.
  static void run_rows(std::span<const Tensor> tensors, const RowOffsets& in_rows,
                       const RowOffsets& out_rows, const Geometry& geo, std::int64_t m,
                       const Context& ctx) {
    const Tensor& input = tensors[tensor_index(decls::linear_packed, "input")];
    const Tensor& packed = tensors[tensor_index(decls::linear_packed, "packed")];
    const Tensor& bias = tensors[tensor_index(decls::linear_packed, "bias")];
    const Tensor& out = tensors[tensor_index(decls::linear_packed, "out")];
    const DataType dtype = input.dtype();
    ThreadPool& pool = ctx.threads();
    Carve carve("linear_packed: argument 'input': its workspace");
    const std::int64_t ld_x = checked_add(geo.k_padded, 16, carve.what());  // off 4 KiB multiples
    const std::int64_t ld_out = geo.groups * kRows;
    const std::int64_t x_at = carve.take({m, ld_x}, sizeof(float));
    const std::int64_t acc_at = carve.take({m, ld_out}, sizeof(float));
    const std::int64_t bias_at = carve.take({ld_out}, sizeof(float));
    const std::int64_t thread_at = carve.take({pool.num_threads(), ld_out}, sizeof(float));
    WorkspacePool::Lease lease =
        ctx.workspace().acquire(kCpu, ctx.stream, 0, static_cast<std::size_t>(carve.bytes()));
    char* base = lease.as<char>();
    auto* x = reinterpret_cast<float*>(base + x_at);
    auto* acc = reinterpret_cast<float*>(base + acc_at);
    float* bias32 = bias.data() != nullptr ? reinterpret_cast<float*>(base + bias_at) : nullptr;
    if (bias32 != nullptr) load_f32(bias.data(), bias.dtype(), bias.stride(0), geo.n, bias32);
    for (std::int64_t i = 0; i < m; ++i) {
      float* row = x + i * ld_x;
      load_f32(element_at(input, in_rows(i)), dtype, input.stride(-1), geo.k, row);
      std::fill(row + geo.k, row + geo.k_padded, 0.0f);
    }
    const char* weights = static_cast<const char*>(packed.data());
    const std::size_t w_size = input.element_size();
    const bool direct = dtype == DataType::kFloat32 && out.stride(-1) == 1;
    const std::int64_t per_pass = packed_rows_pass_max(dtype);
    pool.parallel_range(geo.groups, 1, [&](int chunk, std::int64_t g0, std::int64_t g1) {
      if (geo.blocks == 0) {
        for (std::int64_t i = 0; i < m; ++i) {
          std::fill(acc + i * ld_out + g0 * kRows, acc + i * ld_out + g1 * kRows, 0.0f);
        }
      }
      for (std::int64_t kb = 0; kb < geo.blocks; ++kb) {
        const std::int64_t len = geo.block_k(kb);
        for (std::int64_t g = g0; g < g1; ++g) {
          const char* w = weights + geo.block_offset(kb, g) * w_size;
          for (std::int64_t i0 = 0; i0 < m; i0 += per_pass) {
            const int rows = static_cast<int>(std::min(per_pass, m - i0));
            const float* x_rows[kPackedRowsMax];
            for (int r = 0; r < rows; ++r) x_rows[r] = x + (i0 + r) * ld_x + kb * kBlockK;
            // Later passes find the block in L1: only the first requests the stream ahead.
            packed_rows_block(x_rows, rows, w, dtype, len, acc + i0 * ld_out + g * kRows, ld_out,
                              kb > 0, i0 == 0);
          }
        }
      }
      auto* scratch = reinterpret_cast<float*>(base + thread_at) + chunk * ld_out;
      const std::int64_t col0 = g0 * kRows, cols = std::min(g1 * kRows, geo.n) - col0;
      for (std::int64_t i = 0; i < m; ++i) {
        char* dst = element_at(out, out_rows(i) + col0 * out.stride(-1));
        float* row = direct ? reinterpret_cast<float*>(dst) : scratch;
        gemm_epilogue_row(acc + i * ld_out + col0, 1.0f, nullptr, 0.0f,
                          bias32 != nullptr ? bias32 + col0 : nullptr, cols, row);
        if (!direct) store_f32(row, dst, dtype, out.stride(-1), cols);
      }
    });
  }
};

}  // namespace

void register_packed_linear(std::vector<Implementation>& out) {
  out.push_back({"pack_linear_weight", DeviceType::kCpu, 0, "native",
                 [](const Problem&) { return std::make_unique<PackLinearWeightCpu>(); }});
  out.push_back({"linear_packed", DeviceType::kCpu, 0, "native",
                 [](const Problem&) { return std::make_unique<LinearPackedCpu>(); }});
}

}  // namespace tileops::ops::cpu

namespace tileops::ops {

bool linear_packing_pays(DataType dtype) {
  if (dtype != DataType::kFloat32 && dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
    throw_argument_error(ErrorKind::kInvalidArgument, "linear_packing_pays", "dtype",
                         "float32, float16 or bfloat16", name_of(dtype));
  }
  return !(dtype == DataType::kBFloat16 && cpu::amx_bf16_enabled());
}

}  // namespace tileops::ops
