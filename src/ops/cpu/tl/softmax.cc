// scaled_softmax and causal_softmax as one tile-language kernel over rows of a folded rank-3
// view [d0, d1, width] (folded_loop.h). Row (i0, i1) sees its first
// visible = width - queries + i1 % queries + 1 columns (queries = 1: the whole row; queries = S
// for causal [B, S, T] viewed unfolded) and gets zeros after them. The visible prefix is walked
// in [1, 1, kTile] chunks three times:
// 1. the max of x · scale (for a finite nonzero scale, the x it comes from, the max or min of x
//    alone: the anchor; of 16-bit rows from integer keys of their bits, keyed_max);
// 2. e^(x - max) in float32 as 2^((x - anchor) scale log2 e), summed (one exp2 per element;
//    16-bit rows, as the native kernel, exp2_coarse), stored into out itself for float32 rows
//    whose stores stay cached, else into one of the block's two rows of a float32 scratch
//    tensor [blocks, 2, width] (from the Context's workspace: it stays in cache);
// 3. that row scaled by 1 / sum into out: float32 rows (and 16-bit rows on Intel cores) as a
//    third pass; other 16-bit rows during the next row's pass 2, chunk by chunk (the block's
//    last row after its loop).
// Only the chunk that straddles the end of the visible prefix is masked; the masked suffix is
// only written. Causal rows go to blocks round-robin (their cost grows along the rows), others in
// contiguous runs.
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "src/ops/contracts/causal_softmax.decl.h"
#include "src/ops/contracts/scaled_softmax.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/tl/folded_loop.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/knobs.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu {
namespace {

namespace tl = ::tileops::tl;
using tl_impl::exp2_coarse;
using tl_impl::FoldedLoop;
using tl_impl::kFastMath;
using tl_impl::kLog2e;
using tl_impl::pointer_at;

constexpr std::int64_t kTile = 1024;
const DataType kF32 = DataType::kFloat32;
// x read as integers (x_bits): int16 for 16-bit rows; float32 rows do not read it.
const DataType kBits = DataType::kInt16;

// How pass 1 finds the max of x · scale: by multiplying every element (any scale), or from the
// max (scale > 0) or min (scale < 0) of x alone, multiplied once.
enum class MaxOrder { kGeneric, kPositive, kNegative };

// The max (up) or min of the first `visible` elements of row (i0, i1) of a float16 or bfloat16
// tensor, as float32; NaN if any of them is NaN. From integer keys of `bits`, the same memory read
// as int16: the 16-bit floats are sign and magnitude, so b ^ ((b >> 15) & 0x7fff) orders them as
// their values (-0 just below +0, which no shift by the max can tell apart). Per 32 lanes five
// integer operations, the NaN probe's included, against a widening, a multiply, a max and a probe
// per 16.
tl::Value keyed_max(const tl::Value& bits, DataType dtype, const tl::Value& i0, const tl::Value& i1,
                    const tl::Value& visible, const tl::Value& full, const tl::Value& chunks,
                    const tl::Value& lanes, bool up) {
  const std::int64_t inf_bits = dtype == DataType::kBFloat16 ? 0x7f80 : 0x7c00;
  const std::int64_t none = up ? -32768 : 32767;  // the key no element beats
  const auto key = [](const tl::Value& b) { return b ^ ((b >> 15) & 0x7fff); };  // self-inverse
  tl::Var k = none;
  tl::Var magnitude = 0;  // the largest |bits|: above inf_bits, a NaN
  const auto take = [&](const tl::Value& keys, const tl::Value& magnitudes) {
    k = up ? tl::maximum(k, tl::reduce_max(keys)) : tl::minimum(k, tl::reduce_min(keys));
    magnitude = tl::maximum(magnitude, tl::reduce_max(magnitudes));
  };
  for (tl::Value c : tl::range(full)) {
    const tl::Value b = tl::load(bits, {1, 1, kTile}, {i0, i1, c * kTile});
    take(key(b), b & 0x7fff);
  }
  for (tl::Value c : tl::range(full, chunks)) {
    const tl::Value col = c * kTile, live = lanes + col < visible;
    const tl::Value b = tl::load(bits, {1, 1, kTile}, {i0, i1, col});
    take(tl::where(live, key(b), none), tl::where(live, b & 0x7fff, 0));
  }
  const tl::Value value =
      tl::reduce_max(tl::full({1}, key(k), DataType::kInt16).bitcast(dtype).to(kF32));
  return tl::where(magnitude > inf_bits, NAN, value);
}

const tl::Kernel& softmax_kernel(MaxOrder order) {
  const auto make = [](MaxOrder order) {
    return tl::jit(
        "tileops_softmax",
        [order](tl::GlobalAddress x, tl::GlobalAddress x_bits, tl::GlobalAddress out,
                tl::GlobalAddress scratch, tl::Int d0, tl::Int d1, tl::Int width, tl::Int sx0,
                tl::Int sx1, tl::Int sx2, tl::Int so0, tl::Int so1, tl::Int so2, tl::Float scale,
                tl::Int queries, tl::ConstExpr<bool> cached_stores, tl::ConstExpr<bool> pipeline) {
          const tl::Value tx = tl::tensor(x, {d0, d1, width}, {sx0, sx1, sx2});
          const tl::Value to = tl::tensor(out, {d0, d1, width}, {so0, so1, so2});
          const tl::Value ts = tl::tensor(scratch, {tl::block_num(), 2, width});
          const tl::Value own = tl::block_idx();  // this block's scratch row
          const DataType dtype = x.dtype();
          const tl::Value lanes = tl::arange(kTile);  // int32: rows are shorter than 2^31
          const tl::Value scale2 = scale * kLog2e;
          // Causal rows round-robin (their cost grows with i1), the others in contiguous runs.
          const tl::Value rows = d0 * d1, per_block = tl::ceildiv(rows, tl::block_num());
          const tl::Value round_robin = tl::minimum(queries - 1, 1);  // 0 or 1
          const tl::Value first = tl::block_idx() * (round_robin + (1 - round_robin) * per_block);
          const tl::Value stop =
              round_robin * rows + (1 - round_robin) * tl::minimum(first + per_block, rows);
          const tl::Value step = round_robin * tl::block_num() + (1 - round_robin);
          const bool in_out = dtype == kF32 && *cached_stores;  // the stash is out itself
          // Pipelined rows (the launcher's choice): the previous row of this block is normalised
          // from its scratch row (1 - slot) during this row's exp pass.
          const bool pipelined = *pipeline;
          tl::Var slot = 0, has_prev = 0, prev0 = 0, prev1 = 0, prev_visible = 0;
          tl::Var prev_inv = 0.0f;
          // Chunk c of the previous row into out: `live` masks its straddling chunk.
          const auto normalise_prev = [&](const tl::Value& c, bool live) {
            const tl::Value col = c * kTile;
            tl::Value p = tl::load(ts, {1, 1, kTile}, {own, 1 - slot, col}) * prev_inv;
            if (live) p = tl::where(lanes + col < prev_visible, p, 0.0f);
            tl::store(dtype == kF32 ? p : p.to(dtype), to, {prev0, prev1, col});
          };
          const auto prev_chunk = [&](const tl::Value& c) {
            tl::if_(
                c < tl::floordiv(prev_visible, kTile), [&] { normalise_prev(c, false); },
                [&] {
                  tl::if_(c < tl::ceildiv(prev_visible, kTile), [&] { normalise_prev(c, true); });
                });
          };
          // What of the previous row no chunk of this one's exp pass wrote: its chunks from
          // `from` on, then zeros.
          const auto finish_prev = [&](const tl::Value& from) {
            tl::if_(has_prev, [&] {
              const tl::Value chunks = tl::ceildiv(prev_visible, kTile);
              for (tl::Value c : tl::range(from, chunks)) prev_chunk(c);
              const tl::Value zero = tl::zeros({1, 1, kTile}, dtype);
              for (tl::Value c : tl::range(tl::maximum(chunks, 0), tl::ceildiv(width, kTile))) {
                tl::store(zero, to, {prev0, prev1, c * kTile});
              }
            });
          };
          for (tl::Value r : tl::range(first, stop, step)) {
            const tl::Value i0 = tl::floordiv(r, d1);
            const tl::Value i1 = r - i0 * d1;
            const tl::Value next0 = tl::floordiv(r + step, d1);  // this block's next row
            const tl::Value next1 = r + step - next0 * d1;
            const tl::Value visible = width - queries + i1 % queries + 1;
            const tl::Value full = tl::floordiv(visible, kTile);  // chunks without masked lanes
            const tl::Value chunks = tl::ceildiv(visible, kTile);
            const auto chunk = [&](const tl::Value& col) {  // x over the chunk at col, float32
              const tl::Value v = tl::load(tx, {1, 1, kTile}, {i0, i1, col});
              return dtype == kF32 ? v : v.to(kF32);
            };
            // -inf past the visible prefix.
            const auto masked = [&](const tl::Value& col, const tl::Value& v) {
              return tl::where(lanes + col < visible, v, -INFINITY);
            };
            // Pass 1: the row's max of x · scale; for a finite nonzero scale also the x it comes
            // from (anchor).
            tl::Var max = -INFINITY;
            std::optional<tl::Value> anchor;
            if (order == MaxOrder::kGeneric) {
              for (tl::Value c : tl::range(full)) {
                max = tl::maximum(max, tl::reduce_max(chunk(c * kTile) * scale));
              }
              for (tl::Value c : tl::range(full, chunks)) {
                const tl::Value col = c * kTile;
                max = tl::maximum(max, tl::reduce_max(masked(col, chunk(col) * scale)));
              }
            } else if (dtype == kF32) {
              // scale > 0: max(x · scale) = max(x) · scale (rounding is monotonic); scale < 0: the
              // min's. One multiply less per element.
              const bool up = order == MaxOrder::kPositive;
              const auto extreme = [&](const tl::Value& v) {
                return up ? tl::reduce_max(v) : tl::reduce_min(v);
              };
              tl::Var m = up ? -INFINITY : INFINITY;
              for (tl::Value c : tl::range(full)) {
                m = up ? tl::maximum(m, extreme(chunk(c * kTile)))
                       : tl::minimum(m, extreme(chunk(c * kTile)));
              }
              for (tl::Value c : tl::range(full, chunks)) {
                const tl::Value col = c * kTile;
                const tl::Value v =
                    tl::where(lanes + col < visible, chunk(col), up ? -INFINITY : INFINITY);
                m = up ? tl::maximum(m, extreme(v)) : tl::minimum(m, extreme(v));
              }
              anchor = m;
            } else {
              const tl::Value bits = tl::tensor(x_bits, {d0, d1, width}, {sx0, sx1, sx2});
              anchor = keyed_max(bits, dtype, i0, i1, visible, full, chunks, lanes,
                                 order == MaxOrder::kPositive);
            }
            // Pass 2: e^(x - max) and its sum, into the stash: out itself for float32 rows whose
            // stores stay cached, else the scratch row. Streamed stores need no lines of out, so
            // reading them (as a stash, or by prefetch) fetched out from memory for nothing: 2x the
            // time on Zen 4 (bench/results/cpu-tuning.md). Meanwhile the next row's chunk (whose
            // max pass then reads from cache) and, for cached stores, this row's out chunk (so
            // that pass 3 does not wait for its lines) are fetched: this pass computes.
            const tl::Value& stash = in_out ? to : ts;
            const auto stash_at = [&](const tl::Value& col) {
              return in_out ? tl::IndexList{i0, i1, col} : tl::IndexList{own, slot, col};
            };
            // The exponent x · scale - max in log2 units: exp2 takes half the multiply-adds of exp
            // (no range reduction by ln2). As (x - anchor) · scale it is exact near the max on
            // every target; as one multiply-add x · scale - max, only where that fuses (FMA), and
            // its max · log2 e errs by |max| · 2^-24 (past 2^±128 for a row of 1e10s).
            const tl::Value max2 = max * kLog2e;
            const auto exponent = [&](const tl::Value& col) {
              return anchor ? (chunk(col) - *anchor) * scale2 : chunk(col) * scale2 - max2;
            };
            tl::Var sum = 0.0f;
            // The chunk at col; with `live`, lanes where it is false give 0.
            const auto exp_pass = [&](const tl::Value& col,
                                      const std::optional<tl::Value>& live = std::nullopt) {
              tl::prefetch(tx, {1, 1, kTile}, {next0, next1, col});
              if (*cached_stores) tl::prefetch(to, {1, 1, kTile}, {i0, i1, col});
              const tl::Value y = exponent(col);
              const tl::Value e = dtype == kF32
                                      ? tl::exp2(live ? tl::where(*live, y, -INFINITY) : y)
                                      : exp2_coarse(y, live);
              sum = sum + tl::reduce_sum(e);
              tl::store(e, stash, stash_at(col));
            };
            // The previous row's chunk c is stored while this row's is computed: the stores
            // drain during the exps (as the native kernel's pipeline; 3 passes left the store
            // bandwidth idle while the exps ran, the FMA units while the stores drained).
            for (tl::Value c : tl::range(full)) {
              exp_pass(c * kTile);
              if (pipelined) prev_chunk(c);
            }
            for (tl::Value c : tl::range(full, chunks)) {
              exp_pass(c * kTile, lanes + c * kTile < visible);
              if (pipelined) prev_chunk(c);
            }
            if (pipelined) {
              finish_prev(tl::maximum(chunks, 0));
              prev0 = i0;
              prev1 = i1;
              prev_visible = visible;
              prev_inv = 1.0 / sum;
              has_prev = 1;
              slot = 1 - slot;
            } else {
              // Pass 3: normalise what pass 2 stored into out; zeros after the visible prefix
              // (also in the straddling chunk, where 0 · inv would be NaN for a NaN row).
              const tl::Value inv = 1.0 / sum;
              const auto normalise = [&](const tl::Value& c, const std::optional<tl::Value>& live) {
                tl::Value p = tl::load(stash, {1, 1, kTile}, stash_at(c * kTile)) * inv;
                if (live) p = tl::where(*live, p, 0.0f);
                tl::store(dtype == kF32 ? p : p.to(dtype), to, {i0, i1, c * kTile});
              };
              for (tl::Value c : tl::range(full)) normalise(c, std::nullopt);
              for (tl::Value c : tl::range(full, chunks)) normalise(c, lanes + c * kTile < visible);
              const tl::Value zero = tl::zeros({1, 1, kTile}, dtype);
              for (tl::Value c : tl::range(chunks, tl::ceildiv(width, kTile))) {
                tl::store(zero, to, {i0, i1, c * kTile});
              }
            }
          }
          if (pipelined) finish_prev(0);  // the block's last row
        },
        kFastMath);
  };
  static const tl::Kernel kernels[] = {make(MaxOrder::kGeneric), make(MaxOrder::kPositive),
                                       make(MaxOrder::kNegative)};
  return kernels[static_cast<int>(order)];
}

// queries = 1 for scaled_softmax; S for causal_softmax, whose [B, S, T] view is kept unfolded so
// that i1 is the query row.
class SoftmaxTl final : public Operator {
 public:
  SoftmaxTl(float scale, bool causal) : scale_(scale), causal_(causal) {}
  void run(std::span<const Tensor> t, const Context& ctx) const override {
    // causal_softmax and scaled_softmax: (input, out).
    static_assert(tensor_index(decls::causal_softmax, "input") == 0 &&
                  tensor_index(decls::scaled_softmax, "input") == 0 &&
                  tensor_index(decls::causal_softmax, "out") == 1 &&
                  tensor_index(decls::scaled_softmax, "out") == 1);
    const Tensor &x = t[0], &out = t[1];
    if (x.numel() == 0) return;
    if (causal_) {
      const bool batched = x.rank() == 3;
      const std::int64_t b = batched ? x.size(0) : 1;
      const std::int64_t sx0 = batched ? x.stride(0) : 0, so0 = batched ? out.stride(0) : 0;
      launch(ctx, x, out, {b, x.size(-2), x.size(-1)}, {sx0, x.stride(-2), x.stride(-1)},
             {so0, out.stride(-2), out.stride(-1)}, 0, 0, x.size(-2));
      return;
    }
    const Dims strides[] = {x.strides(), out.strides()};
    const FoldedLoop loop(x.shape(), strides, true);
    loop.for_each_launch([&](const std::int64_t* offsets) {
      launch(ctx, x, out, loop.shape(), loop.strides(0), loop.strides(1), offsets[0], offsets[1],
             1);
    });
  }

 private:
  using View = FoldedLoop::View;
  void launch(const Context& ctx, const Tensor& x, const Tensor& out, const View& d, const View& sx,
              const View& so, std::int64_t x_offset, std::int64_t out_offset,
              std::int64_t queries) const {
    ThreadPool& pool = ctx.threads();
    const int blocks = pool.num_threads();
    const WorkspacePool::Lease lease =
        ctx.workspace().acquire(kCpu, ctx.stream, 0,
                                workspace_bytes({{blocks, 2, d[2]}}, sizeof(float),
                                                "softmax: argument 'input': its workspace"));
    // Only a finite, nonzero scale keeps the order of x (0 · inf is NaN, inf · x overflows).
    const MaxOrder order = !std::isfinite(scale_) || scale_ == 0.0f ? MaxOrder::kGeneric
                           : scale_ > 0.0f                          ? MaxOrder::kPositive
                                                                    : MaxOrder::kNegative;
    // Whether pass 3's stores stay cached, by the code generator's rule for streaming them (rows
    // of unit stride, tensors above cpu_streaming_store_bytes; scratch and x's bits not counted
    // here: near the threshold this only picks the slower stash).
    const auto bytes = [](const Tensor& t) {  // of a tensor in memory: no overflow
      return t.numel() * static_cast<std::int64_t>(size_of(t.dtype()));
    };
    const bool cached_stores = so[2] != 1 || bytes(x) + bytes(out) <= cpu_streaming_store_bytes();
    // 16-bit rows pipelined except on Intel cores. bfloat16 [4096, 4096], 2 threads, tl / native:
    // Zen 4 avx2 target three passes 0.60-0.63 → pipelined 0.72-0.78 (native within noise);
    // Emerald Rapids causal 0.76-0.77 → 0.73-0.75 native and 0.59-0.61 → 0.53-0.54 avx2. Not
    // float32 rows, whose exps cost less: where they stream, interleaving their stores with the
    // loads of x measured slower (scaled softmax, Zen 4 avx2 target).
    // TILEOPS_TL_SOFTMAX_PIPELINE (0 or 1) overrides it: tests reach both forms on any CPU.
    const std::optional<std::string> forced = knob("TILEOPS_TL_SOFTMAX_PIPELINE");
    const bool pipeline =
        x.dtype() != DataType::kFloat32 &&
        (forced && !forced->empty() ? *forced != "0" : cpu_vendor() != CpuVendor::kIntel);
    softmax_kernel(order).launch_on(
        pool, blocks, pointer_at(x, x_offset), tl::Pointer{pointer_at(x, x_offset).data, kBits},
        pointer_at(out, out_offset), lease.as<float>(), d[0], d[1], d[2], sx[0], sx[1], sx[2],
        so[0], so[1], so[2], scale_, queries, cached_stores, pipeline);
  }

  float scale_;
  bool causal_;
};

}  // namespace

void register_tl_softmax(std::vector<Implementation>& out) {
  out.push_back({"causal_softmax", DeviceType::kCpu, 1, "tl",
                 [](const Problem&) { return std::make_unique<SoftmaxTl>(1.0f, true); }});
  out.push_back(
      {"scaled_softmax", DeviceType::kCpu, 1, "tl", [](const Problem& p) {
         return std::make_unique<SoftmaxTl>(
             static_cast<float>(p.attributes[attribute_index(decls::scaled_softmax, "scale")]),
             false);
       }});
}

}  // namespace tileops::ops::cpu
