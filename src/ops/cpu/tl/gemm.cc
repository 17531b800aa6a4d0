// The tile-language GEMM engine (implementation 2, "tl", of gemm, matmul and linear): one kernel
// computes float32 C tiles of kBm × kBn with matmul_acc over kBk-deep slices of A and B, read
// through their runtime strides (transposes and strided operands need no packing; 16-bit
// operands are widened per tile; float32 A slices with unit column stride are not copied). When C
// is float32 and the call is a plain product, the kernel writes C itself; otherwise it writes a
// float32 workspace and the shared epilogue (store_gemm_rows) applies alpha, beta, bias and
// rounding.
#include <algorithm>

#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/tl/folded_loop.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu {
namespace {

namespace tl = ::tileops::tl;
using tl_impl::as_f32;

// Output tiles of 256 × 128 over slices of 256: the B slice (128 KiB), accumulator (128 KiB) and
// A slice (256 KiB) stay in the 512 KiB L2, a 16-column panel of B in L1. Float32 A slices with
// unit column stride are read in place (matmul_acc takes their row stride); B slices are copied
// in per output tile, so taller tiles copy B less often per FLOP, and 256 rows divide 2048 (192
// computed 3% padding rows). Bench notes in bench/results/tl-ops.md.
constexpr std::int64_t kBm = 256, kBn = 128, kBk = 256;
const DataType kF32 = DataType::kFloat32;

const tl::Kernel& gemm_kernel() {
  static const tl::Kernel kernel =
      tl::jit("tileops_gemm", [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress c,
                                 tl::Int m, tl::Int n, tl::Int k, tl::Int sa0, tl::Int sa1,
                                 tl::Int sb0, tl::Int sb1, tl::Int sc0, tl::Int sc1) {
        const tl::Value ta = tl::tensor(a, {m, k}, {sa0, sa1});
        const tl::Value tb = tl::tensor(b, {k, n}, {sb0, sb1});
        const tl::Value tc = tl::tensor(c, {m, n}, {sc0, sc1});
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
          tl::store(acc, tc, {row, col});
        }
      });
  return kernel;
}

tl::Pointer pointer(const MatrixRef& x) {
  return tl::Pointer{const_cast<void*>(x.data), x.dtype};  // NOLINT: C is written (gemm_call.h)
}

}  // namespace

void tl_gemm(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  if (m == 0 || n == 0) return;
  const bool direct =
      call.c.dtype == kF32 && call.alpha == 1.0f && call.beta == 0.0f && call.bias == nullptr;
  if (direct) {
    gemm_kernel().launch_on(ctx.threads(), 0, pointer(call.a), pointer(call.b), pointer(call.c), m,
                            n, k, call.a.row_stride, call.a.col_stride, call.b.row_stride,
                            call.b.col_stride, call.c.row_stride, call.c.col_stride);
    return;
  }
  ThreadPool& pool = ctx.threads();
  const std::int64_t threads = pool.num_threads();
  WorkspacePool::Lease lease =
      ctx.workspace().acquire(kCpu, ctx.stream, 0,
                              workspace_bytes({{m, n}, {n}, {2, n, threads}}, sizeof(float),
                                              "gemm: argument 'c': its workspace"));
  float* acc = lease.as<float>();
  float* bias = acc + m * n;
  float* scratch = bias + n;
  gemm_kernel().launch_on(ctx.threads(), 0, pointer(call.a), pointer(call.b),
                          tl::Pointer{acc, kF32}, m, n, k, call.a.row_stride, call.a.col_stride,
                          call.b.row_stride, call.b.col_stride, n, std::int64_t{1});
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  const float* bias_f32 = call.bias != nullptr ? bias : nullptr;
  pool.parallel_range(m, std::max<std::int64_t>(1, 4096 / n),
                      [&](int chunk, std::int64_t begin, std::int64_t end) {
                        store_gemm_rows(call, acc + begin * n, n, begin, end, 0, n, bias_f32,
                                        scratch + 2 * n * chunk);
                      });
}

}  // namespace tileops::ops::cpu
