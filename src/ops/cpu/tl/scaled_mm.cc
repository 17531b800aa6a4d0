// The tile-language implementation (index 1, "tl") of scaled_mm: float8 tiles of a and b are
// decoded as they load (the tl backends read float8 natively) and multiplied with float32
// accumulation by matmul_acc. Per tensor/token/channel scales multiply each output tile once,
// from scale vectors of M and N floats the host expands; 128×128 block scales multiply each
// 128-deep partial product by scale_a's column of the tile's rows and scale_b's one value for its
// 128 columns. The kernel writes float32; the shared epilogue (store_gemm_rows) adds the bias and
// rounds to out's dtype, as the tl GEMM engine does.
#include <algorithm>

#include "src/ops/contracts/scaled_mm.decl.h"
#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/tl/folded_loop.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/scaled_mm.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu {
namespace {

namespace tl = ::tileops::tl;
using tl_impl::as_f32;

constexpr const OpDecl& kDecl = decls::scaled_mm;
const DataType kF32 = DataType::kFloat32;
// The tl GEMM engine's tiles (src/ops/cpu/tl/gemm.cc); with block scales K goes 128 at a time
// and an output tile's 128 columns share one of scale_b's blocks.
constexpr std::int64_t kBm = 256, kBn = 128, kBk = 256;
constexpr std::int64_t kBlock = kScaledMmBlock;
static_assert(kBn == kBlock);

// c = (a @ b) · sa[i] · sb[j]: sa, sb float32 vectors of M and N.
const tl::Kernel& vector_scales_kernel() {
  static const tl::Kernel kernel = tl::jit(
      "tileops_scaled_mm", [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress sa,
                              tl::GlobalAddress sb, tl::GlobalAddress c, tl::Int m, tl::Int n,
                              tl::Int k, tl::Int sa0, tl::Int sa1, tl::Int sb0, tl::Int sb1) {
        const tl::Value ta = tl::tensor(a, {m, k}, {sa0, sa1});
        const tl::Value tb = tl::tensor(b, {k, n}, {sb0, sb1});
        const tl::Value tsa = tl::tensor(sa, {m, 1}, {1, 1});
        const tl::Value tsb = tl::tensor(sb, {1, n}, {1, 1});
        const tl::Value tc = tl::tensor(c, {m, n}, {n, 1});
        const tl::Value col_tiles = tl::ceildiv(n, kBn);
        const tl::Value tiles = tl::ceildiv(m, kBm) * col_tiles;
        for (tl::Value t : tl::range(tl::block_idx(), tiles, tl::block_num())) {
          const tl::Value row = tl::floordiv(t, col_tiles) * kBm;
          const tl::Value col = (t % col_tiles) * kBn;
          tl::Var acc = tl::zeros({kBm, kBn}, kF32);
          for (tl::Value p : tl::range(tl::ceildiv(k, kBk))) {
            acc = tl::matmul_acc(acc, as_f32(tl::load(ta, {kBm, kBk}, {row, p * kBk})),
                                 as_f32(tl::load(tb, {kBk, kBn}, {p * kBk, col})));
          }
          tl::store(tl::Value(acc) * tl::load(tsa, {kBm, 1}, {row, 0}) *
                        tl::load(tsb, {1, kBn}, {0, col}),
                    tc, {row, col});
        }
      });
  return kernel;
}

// c = Σ_kb (a[:, kb] @ b[kb, :]) · scale_a[i, kb] · scale_b[kb, j / 128] over K blocks of 128.
const tl::Kernel& block_scales_kernel() {
  static const tl::Kernel kernel = tl::jit(
      "tileops_scaled_mm_blocks",
      [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress sa, tl::GlobalAddress sb,
         tl::GlobalAddress c, tl::Int m, tl::Int n, tl::Int k, tl::Int sa0, tl::Int sa1,
         tl::Int sb0, tl::Int sb1, tl::Int ssa0, tl::Int ssa1, tl::Int ssb0, tl::Int ssb1) {
        const tl::Value k_blocks = tl::ceildiv(k, kBlock);
        const tl::Value ta = tl::tensor(a, {m, k}, {sa0, sa1});
        const tl::Value tb = tl::tensor(b, {k, n}, {sb0, sb1});
        const tl::Value tsa = tl::tensor(sa, {m, k_blocks}, {ssa0, ssa1});
        const tl::Value tsb = tl::tensor(sb, {k_blocks, tl::ceildiv(n, kBlock)}, {ssb0, ssb1});
        const tl::Value tc = tl::tensor(c, {m, n}, {n, 1});
        const tl::Value col_tiles = tl::ceildiv(n, kBn);
        const tl::Value tiles = tl::ceildiv(m, kBm) * col_tiles;
        for (tl::Value t : tl::range(tl::block_idx(), tiles, tl::block_num())) {
          const tl::Value row = tl::floordiv(t, col_tiles) * kBm;
          const tl::Value col_tile = t % col_tiles;
          const tl::Value col = col_tile * kBn;
          tl::Var acc = tl::zeros({kBm, kBn}, kF32);
          for (tl::Value p : tl::range(k_blocks)) {
            const tl::Value part =
                tl::matmul(as_f32(tl::load(ta, {kBm, kBlock}, {row, p * kBlock})),
                           as_f32(tl::load(tb, {kBlock, kBn}, {p * kBlock, col})));
            acc = tl::Value(acc) +
                  part * tl::load(tsa, {kBm, 1}, {row, p}) * tl::load(tsb, {1, 1}, {p, col_tile});
          }
          tl::store(acc, tc, {row, col});
        }
      });
  return kernel;
}

tl::Pointer pointer(const Tensor& t) {
  return tl::Pointer{const_cast<void*>(t.data()), t.dtype()};  // NOLINT: only out is written
}

class ScaledMmTl final : public Operator {
 public:
  explicit ScaledMmTl(bool block) : block_(block) {}

  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const Tensor& a = t[tensor_index(kDecl, "a")];
    const Tensor& b = t[tensor_index(kDecl, "b")];
    const Tensor& scale_a = t[tensor_index(kDecl, "scale_a")];
    const Tensor& scale_b = t[tensor_index(kDecl, "scale_b")];
    const Tensor& bias = t[tensor_index(kDecl, "bias")];
    const Tensor& out = t[tensor_index(kDecl, "out")];
    const std::int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    if (m == 0 || n == 0) return;
    ThreadPool& pool = ctx.threads();
    // Workspace in floats: the sums [m, n], the bias, the scale vectors, epilogue rows.
    const std::int64_t ld = round_up(n, 16);
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes({{m, n}, {ld}, {round_up(m, 16)}, {ld}, {pool.num_threads(), 2, ld}},
                        sizeof(float), "scaled_mm: argument 'a': its workspace"));
    float* sums = lease.as<float>();
    float* bias32 = sums + m * n;
    float* sa = bias32 + ld;
    float* sb = sa + round_up(m, 16);
    float* scratch = sb + ld;
    const tl::Pointer c{sums, kF32};
    if (k == 0) {
      std::fill(sums, sums + m * n, 0.0f);
    } else if (block_) {
      block_scales_kernel().launch_on(pool, 0, pointer(a), pointer(b), pointer(scale_a),
                                      pointer(scale_b), c, m, n, k, a.stride(0), a.stride(1),
                                      b.stride(0), b.stride(1), scale_a.stride(0),
                                      scale_a.stride(1), scale_b.stride(0), scale_b.stride(1));
    } else {
      // The contract's scales are contiguous, of one element (per tensor) or one per row of a /
      // column of b.
      const float* sa_in = scale_a.data_as<const float>();
      const float* sb_in = scale_b.data_as<const float>();
      for (std::int64_t i = 0; i < m; ++i) sa[i] = sa_in[scale_a.numel() > 1 ? i : 0];
      for (std::int64_t j = 0; j < n; ++j) sb[j] = sb_in[scale_b.numel() > 1 ? j : 0];
      vector_scales_kernel().launch_on(pool, 0, pointer(a), pointer(b), tl::Pointer{sa, kF32},
                                       tl::Pointer{sb, kF32}, c, m, n, k, a.stride(0), a.stride(1),
                                       b.stride(0), b.stride(1));
    }
    if (bias.data() != nullptr) load_f32(bias.data(), bias.dtype(), bias.stride(0), n, bias32);
    GemmCall call;
    call.m = m, call.n = n, call.k = k;
    call.c = {out.data(), out.dtype(), out.stride(0), out.stride(1)};
    pool.parallel_range(m, std::max<std::int64_t>(1, 4096 / n),
                        [&](int chunk, std::int64_t begin, std::int64_t end) {
                          store_gemm_rows(call, sums + begin * n, n, begin, end, 0, n,
                                          bias.data() != nullptr ? bias32 : nullptr,
                                          scratch + 2 * ld * chunk);
                        });
  }

 private:
  bool block_;
};

}  // namespace

void register_tl_scaled_mm(std::vector<Implementation>& out) {
  out.push_back({"scaled_mm", DeviceType::kCpu, 1, "tl", [](const Problem& p) {
                   const double block = p.attributes[derived_attribute_index(kDecl, 0)];
                   return std::make_unique<ScaledMmTl>(block != 0.0);
                 }});
}

}  // namespace tileops::ops::cpu
