// rms_norm and add_rms_norm as tile-language kernels over rows (the last dim) of a folded
// rank-3 view (folded_loop.h). A row is walked in [1, 1, kTile] chunks twice: each chunk's sum of
// squares is added to a float32 scalar (which stays in a register: a float32 tile accumulator
// was stored and reloaded for every chunk), then the chunks are scaled by
// rsqrt(mean + eps) and the weight and stored; the second walk finds the row in cache. Blocks
// take contiguous runs of rows (one sequential stream each). A 16-bit weight is widened to float32
// once per call on the host (the kernels would otherwise widen it again for every row), so one
// kernel is compiled per input dtype. rms_norm compiles with fast_math, which lets its sums of
// squares add blocks of 64 in float32 before widening them (tl_acc64_sq; relative error within 3
// float32 roundings per block): the double sum's dependent additions bound the first walk. So
// does add_rms_norm (bench/results/cpu-tuning.md).
#include <memory>

#include "src/ops/contracts/add_rms_norm.decl.h"
#include "src/ops/contracts/rms_norm.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/streaming.h"
#include "src/ops/cpu/tl/folded_loop.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/workspace_pool.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu {
namespace {

namespace tl = ::tileops::tl;
using tl_impl::as_dtype;
using tl_impl::as_f32;
using tl_impl::FoldedLoop;
using tl_impl::kFastMath;
using tl_impl::pointer_at;

constexpr std::int64_t kTile = 1024;
const DataType kF32 = DataType::kFloat32;

// Row r's indices in the folded view.
struct Row {
  tl::Value i0, i1;
  Row(const tl::Value& r, const tl::Value& d1) : i0(tl::floordiv(r, d1)), i1(r - i0 * d1) {}
};

// Calls body(row, next) for each row of this block's contiguous run of the d0 · d1 rows; `next`
// is the row after it.
template <typename Body>
void for_block_rows(const tl::Value& d0, const tl::Value& d1, const Body& body) {
  const tl::Value per_block = tl::ceildiv(d0 * d1, tl::block_num());
  const tl::Value first = tl::block_idx() * per_block;
  for (tl::Value r : tl::range(first, tl::minimum(first + per_block, d0 * d1))) {
    const Row row(r, d1), next(r + 1, d1);  // in this order: they trace ops
    body(row, next);
  }
}

// out = x · scale · w for every chunk of one row; x(col) gives the float32 chunk at col. The
// chunk at col of each row in `next` (the block's next row in each input) is fetched meanwhile:
// the first walk of that row then finds it in cache.
template <typename X>
void scale_row(const X& x, const tl::Value& scale, const tl::Value& tw, const tl::Value& to,
               const Row& row, std::initializer_list<tl::Value> next_inputs, const Row& next,
               const tl::Value& chunks) {
  const tl::Value &i0 = row.i0, &i1 = row.i1;
  for (tl::Value c : tl::range(chunks)) {
    const tl::Value col = c * kTile;
    for (const tl::Value& t : next_inputs) tl::prefetch(t, {1, 1, kTile}, {next.i0, next.i1, col});
    const tl::Value w = as_f32(tl::load(tw, {kTile}, {col}));
    tl::store(as_dtype(x(col) * scale * w, to.dtype()), to, {i0, i1, col});
  }
}

const tl::Kernel& rms_norm_kernel() {
  static const tl::Kernel kernel = tl::jit(
      "tileops_rms_norm",
      [](tl::GlobalAddress x, tl::GlobalAddress w, tl::GlobalAddress out, tl::Int d0, tl::Int d1,
         tl::Int width, tl::Int sx0, tl::Int sx1, tl::Int sx2, tl::Int sw, tl::Int so0, tl::Int so1,
         tl::Int so2, tl::Float eps) {
        const tl::Value tx = tl::tensor(x, {d0, d1, width}, {sx0, sx1, sx2});
        const tl::Value tw = tl::tensor(w, {width}, {sw});
        const tl::Value to = tl::tensor(out, {d0, d1, width}, {so0, so1, so2});
        const tl::Value chunks = tl::ceildiv(width, kTile);
        for_block_rows(d0, d1, [&](const Row& row, const Row& next) {
          const tl::Value &i0 = row.i0, &i1 = row.i1;
          const auto chunk = [&](const tl::Value& col) {
            return as_f32(tl::load(tx, {1, 1, kTile}, {i0, i1, col}));
          };
          tl::Var acc = 0.0f;
          for (tl::Value c : tl::range(chunks)) {
            const tl::Value v = chunk(c * kTile);
            acc = acc + tl::reduce_sum(v * v);
          }
          const tl::Value scale = tl::rsqrt(acc / width + eps);
          scale_row(chunk, scale, tw, to, row, {tx}, next, chunks);
        });
      },
      kFastMath);
  return kernel;
}

// add_rms_norm: residual_out = round(x + residual); out = rms_norm(residual_out). The second walk
// re-adds x and residual (in cache) unless `reread` (residual_out overwrote an input, or 16-bit
// rows), then it reads residual_out back.
const tl::Kernel& add_rms_norm_kernel() {
  static const tl::Kernel kernel = tl::jit(
      "tileops_add_rms_norm",
      [](tl::GlobalAddress x, tl::GlobalAddress res, tl::GlobalAddress w, tl::GlobalAddress out,
         tl::GlobalAddress res_out, tl::Int d0, tl::Int d1, tl::Int width, tl::Int sx0, tl::Int sx1,
         tl::Int sx2, tl::Int sr0, tl::Int sr1, tl::Int sr2, tl::Int sw, tl::Int so0, tl::Int so1,
         tl::Int so2, tl::Int sq0, tl::Int sq1, tl::Int sq2, tl::Float eps, tl::Bool reread) {
        const tl::Value tx = tl::tensor(x, {d0, d1, width}, {sx0, sx1, sx2});
        const tl::Value tr = tl::tensor(res, {d0, d1, width}, {sr0, sr1, sr2});
        const tl::Value tw = tl::tensor(w, {width}, {sw});
        const tl::Value to = tl::tensor(out, {d0, d1, width}, {so0, so1, so2});
        const tl::Value tq = tl::tensor(res_out, {d0, d1, width}, {sq0, sq1, sq2});
        const DataType dtype = x.dtype();
        const tl::Value chunks = tl::ceildiv(width, kTile);
        for_block_rows(d0, d1, [&](const Row& row, const Row& next) {
          const tl::Value &i0 = row.i0, &i1 = row.i1;
          const auto sum = [&](const tl::Value& col) {  // rounded to the dtype, as stored
            return as_dtype(as_f32(tl::load(tx, {1, 1, kTile}, {i0, i1, col})) +
                                as_f32(tl::load(tr, {1, 1, kTile}, {i0, i1, col})),
                            dtype);
          };
          tl::Var acc = 0.0f;
          for (tl::Value c : tl::range(chunks)) {
            const tl::Value s = sum(c * kTile);
            tl::store(s, tq, {i0, i1, c * kTile});
            const tl::Value v = as_f32(s);
            acc = acc + tl::reduce_sum(v * v);
          }
          const tl::Value scale = tl::rsqrt(acc / width + eps);
          tl::if_(
              reread,
              [&] {
                scale_row(
                    [&](const tl::Value& col) {
                      return as_f32(tl::load(tq, {1, 1, kTile}, {i0, i1, col}));
                    },
                    scale, tw, to, row, {tx, tr}, next, chunks);
              },
              [&] {
                scale_row([&](const tl::Value& col) { return as_f32(sum(col)); }, scale, tw, to,
                          row, {tx, tr}, next, chunks);
              });
        });
      },
      kFastMath);
  return kernel;
}

// rms_norm and add_rms_norm both have eps as their only attribute.
float eps_of(const Problem& p) {
  static_assert(attribute_index(decls::rms_norm, "eps") == 0 &&
                attribute_index(decls::add_rms_norm, "eps") == 0);
  return static_cast<float>(p.attributes[0]);
}

// The weight as a float32 vector with its stride: w itself, or its widened copy in `lease`.
struct Weight {
  tl::Pointer pointer;
  std::int64_t stride;
};
Weight f32_weight(const Tensor& w, const Context& ctx, WorkspacePool::Lease& lease) {
  if (w.dtype() == kF32) return {pointer_at(w, 0), w.stride(0)};
  const std::int64_t n = w.size(0);
  lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{n}}, sizeof(float), "rms_norm: argument 'weight': its float32 copy"));
  load_f32(w.data(), w.dtype(), w.stride(0), n, lease.as<float>());
  return {tl::Pointer{lease.as<float>(), kF32}, 1};
}

class RmsNormTl final : public Operator {
 public:
  explicit RmsNormTl(const Problem& p) : eps_(eps_of(p)) {}
  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const Tensor& x = t[tensor_index(decls::rms_norm, "input")];
    const Tensor& w = t[tensor_index(decls::rms_norm, "weight")];
    const Tensor& out = t[tensor_index(decls::rms_norm, "out")];
    const Dims strides[] = {x.strides(), out.strides()};
    const FoldedLoop loop(x.shape(), strides, true);
    const auto& d = loop.shape();
    const auto &sx = loop.strides(0), &so = loop.strides(1);
    WorkspacePool::Lease lease;
    const Weight wf = f32_weight(w, ctx, lease);
    loop.for_each_launch([&](const std::int64_t* offsets) {
      rms_norm_kernel().launch_on(ctx.threads(), 0, pointer_at(x, offsets[0]), wf.pointer,
                                  pointer_at(out, offsets[1]), d[0], d[1], d[2], sx[0], sx[1],
                                  sx[2], wf.stride, so[0], so[1], so[2], eps_);
    });
  }

 private:
  float eps_;
};

class AddRmsNormTl final : public Operator {
 public:
  explicit AddRmsNormTl(const Problem& p) : eps_(eps_of(p)) {}
  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const Tensor& x = t[tensor_index(decls::add_rms_norm, "input")];
    const Tensor& res = t[tensor_index(decls::add_rms_norm, "residual")];
    const Tensor& w = t[tensor_index(decls::add_rms_norm, "weight")];
    const Tensor& out = t[tensor_index(decls::add_rms_norm, "out")];
    const Tensor& res_out = t[tensor_index(decls::add_rms_norm, "residual_out")];
    const Dims strides[] = {x.strides(), res.strides(), out.strides(), res_out.strides()};
    const FoldedLoop loop(x.shape(), strides, true);
    const auto& d = loop.shape();
    const auto &sx = loop.strides(0), &sr = loop.strides(1), &so = loop.strides(2),
               &sq = loop.strides(3);
    // The contract allows residual_out to be exactly x's or residual's view (in place). 16-bit
    // rows are read back too while the tensors fit in the cache: re-adding them costs a rounding
    // per element, reading back a copy (bench/results/cpu-tuning.md).
    // Beyond it residual_out is streamed past the cache and re-adding is the cheaper.
    const bool reread = res_out.data() == res.data() || res_out.data() == x.data() ||
                        (x.element_size() == 2 && !stream_stores(res_out, 4));
    WorkspacePool::Lease lease;
    const Weight wf = f32_weight(w, ctx, lease);
    loop.for_each_launch([&](const std::int64_t* o) {
      add_rms_norm_kernel().launch_on(
          ctx.threads(), 0, pointer_at(x, o[0]), pointer_at(res, o[1]), wf.pointer,
          pointer_at(out, o[2]), pointer_at(res_out, o[3]), d[0], d[1], d[2], sx[0], sx[1], sx[2],
          sr[0], sr[1], sr[2], wf.stride, so[0], so[1], so[2], sq[0], sq[1], sq[2], eps_, reread);
    });
  }

 private:
  float eps_;
};

}  // namespace

void register_tl_norms(std::vector<Implementation>& out) {
  out.push_back({"add_rms_norm", DeviceType::kCpu, 1, "tl",
                 [](const Problem& p) { return std::make_unique<AddRmsNormTl>(p); }});
  out.push_back({"rms_norm", DeviceType::kCpu, 1, "tl",
                 [](const Problem& p) { return std::make_unique<RmsNormTl>(p); }});
}

}  // namespace tileops::ops::cpu
