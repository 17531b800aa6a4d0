// The tl attention kernel (attention_kernel.h). Per item the query rows are loaded once, scaled by
// scale · log2 e (the softmax runs in base 2: one exp2 per score), and the key range
// [lo(first row), hi(last row)] is walked in tiles of 64 keys (fewer for odd block sizes), each
// made of pieces of rows that never cross a cache block, every piece's block id read from the
// block table. Per tile: the scores transposed, Sᵀ = K Qᵀ (one product per piece, the key rows its
// left operand, read in place where their rows allow; Qᵀ is formed once per item), plus
// the ALiBi bias, masked per row only when the tile crosses a mask edge or ends early, then the
// online softmax step (row statistics m and l kept as one column per query row)
//   m' = max(m, rowmax S), p = 2^(S - m'), l = l · 2^(m - m') + rowsum p, o = o · 2^(m - m') + p V
// where a row whose max is still -inf subtracts 0 instead (-inf - -inf would be NaN) and a NaN
// score keeps its row NaN. bfloat16 inputs keep K, Qᵀ and V in bfloat16 for both products and
// round p to bfloat16 for P·V, as the native kernel does (VDPBF16PS where the target has
// AVX512-BF16; K and V loaded for the products alone stay bfloat16 bits, read in place), the scale
// applied to the scores instead. The output is o / l, zeros for a row that
// sees no key and NaN for one whose scores were all -inf (l = 0) or held NaN or +inf (l NaN), as
// softmax(QKᵀ)·V gives.
#include "src/ops/cpu/tl/attention_kernel.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/ops/cpu/tl/folded_loop.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu::tl_impl {
namespace {

namespace tl = ::tileops::tl;
const DataType kF32 = DataType::kFloat32;
const DataType kI64 = DataType::kInt64;
constexpr double kLn2 = 0.693147180559945309;

// Past any key index: an unbounded window side, the block size of a packed sequence.
constexpr std::int64_t kUnbounded = std::int64_t{1} << 40;

// The element at `offsets` of a global tensor, as a scalar (a one-element tile, reduced).
tl::Value scalar_at(const tl::Value& tensor, const tl::IndexList& offsets) {
  const tl::Shape ones(offsets.size(), tl::Operand(1));
  return tl::reduce_max(tl::load(tensor, ones, offsets));
}

// Keys or values in the kernel: the view and how head_size is split.
struct KvView {
  tl::Value tensor;
  std::int64_t split;
};

KvView kv_view(const tl::Value& ptr, const tl::Value& blocks, const tl::Value& rows,
               const tl::Value& heads, const tl::Value& d, const std::array<tl::Value, 5>& s,
               std::int64_t split) {
  if (split == 0) return {tl::tensor(ptr, {blocks, rows, heads, d}, {s[0], s[1], s[2], s[3]}), 0};
  return {tl::tensor(ptr, {blocks, rows, heads, tl::floordiv(d, split), split},
                     {s[0], s[1], s[2], s[3], s[4]}),
          split};
}

// n rows (keys) of one kv head from `row` of block `block`, head_tile columns (past head_size:
// zeros), as float32 (bfloat16 kept as it is when `keep_bf16`: a bfloat16 matmul operand);
// 8-bit floats times `scale`.
tl::Value load_rows(const KvView& kv, std::int64_t n, std::int64_t head_tile,
                    const tl::Value& block, const tl::Value& row, const tl::Value& head,
                    const tl::Value& scale, bool keep_bf16 = false) {
  const tl::Value tile = kv.split == 0
                             ? tl::load(kv.tensor, {1, n, 1, head_tile}, {block, row, head, 0})
                             : tl::load(kv.tensor, {1, n, 1, head_tile / kv.split, kv.split},
                                        {block, row, head, 0, 0});
  const tl::Value rows = tl::reshape(tile, {n, head_tile});
  if (keep_bf16 && tile.dtype() == DataType::kBFloat16) return rows;
  return size_of(tile.dtype()) == 1 ? as_f32(rows) * scale : as_f32(rows);
}

using Int = tl::Int;
using Ptr = tl::GlobalAddress;
template <typename T>
using Const = tl::ConstExpr<T>;

const tl::Kernel& attention_kernel() {
  static const tl::Kernel kernel = tl::jit(
      "tileops_attention",
      [](Ptr q, Ptr k, Ptr v, Ptr out, Ptr lse, Ptr items, Ptr table, Ptr slopes, Int n_items,
         Int q_rows, Int ls0, Int ls1, Int kv_heads, Int group, Int d, Int qs0, Int qs1, Int qs2,
         Int os0, Int os1, Int os2, Int k_blocks, Int k_rows, Int ks0, Int ks1, Int ks2, Int ks3,
         Int ks4, Int v_blocks, Int v_rows, Int vs0, Int vs1, Int vs2, Int vs3, Int vs4,
         Int table_rows, Int table_cols, Int block_size, Int window_left, Int window_right,
         tl::Float scale2, tl::Float k_scale, tl::Float v_scale, Const<std::int64_t> positions,
         Const<std::int64_t> heads_per_tile, Const<std::int64_t> head_tile,
         Const<std::int64_t> piece_rows, Const<std::int64_t> pieces, Const<std::int64_t> k_split,
         Const<std::int64_t> v_split) {
        const std::int64_t np = positions, ng = heads_per_tile, rows = np * ng;
        const std::int64_t dt = head_tile, np_rows = piece_rows, ng_pieces = pieces;
        const std::int64_t nk = np_rows * ng_pieces;
        const DataType dtype = q.dtype();
        // bfloat16 query, keys and values: both products take bfloat16 operands (VDPBF16PS where
        // the target has AVX512-BF16), the probabilities rounded to bfloat16 for P·V as the
        // native kernel does, and the scale applied to the float32 scores.
        const bool bf16 = dtype == DataType::kBFloat16 && k.dtype() == dtype && v.dtype() == dtype;
        const tl::Value tq =
            tl::tensor(q, {q_rows, kv_heads, group, d}, {qs0, group * qs1, qs1, qs2});
        const tl::Value to =
            tl::tensor(out, {q_rows, kv_heads, group, d}, {os0, group * os1, os1, os2});
        // The log-sum-exp [heads, rows] viewed as [rows, kv_heads, group].
        const tl::Value tl_lse =
            tl::tensor(lse, {q_rows, kv_heads, group}, {ls1, group * ls0, ls0});
        const tl::Value ti = tl::tensor(items, {n_items, static_cast<std::int64_t>(kItemFields)});
        const tl::Value tt = tl::tensor(table, {table_rows, table_cols});
        const tl::Value ts = tl::tensor(slopes, {kv_heads, group});
        const KvView kk =
            kv_view(k, k_blocks, k_rows, kv_heads, d, {ks0, ks1, ks2, ks3, ks4}, k_split);
        const KvView vv =
            kv_view(v, v_blocks, v_rows, kv_heads, d, {vs0, vs1, vs2, vs3, vs4}, v_split);
        // Row r is position r / ng of the item, head r % ng of its tile.
        const tl::Value row_position = tl::floordiv(tl::reshape(tl::arange(rows), {rows, 1}), ng);
        const tl::Value key_lane = tl::reshape(tl::arange(nk), {nk, 1});  // int32
        for (tl::Value w : tl::range(tl::block_idx(), n_items, tl::block_num())) {
          const auto field = [&](AttentionItemField f) {
            return scalar_at(ti, {w, static_cast<std::int64_t>(f)});
          };
          const tl::Value b = field(kItemTableRow), q_row = field(kItemQueryRow);
          const tl::Value count = field(kItemPositions), kvh = field(kItemKvHead);
          const tl::Value g0 = field(kItemGroupStart), base = field(kItemKvBase);
          const tl::Value len = field(kItemKvLen), diagonal = field(kItemDiagonal);
          // Visible keys [lo, hi] of each row, and of the first and last positions: lo and hi
          // never decrease along the positions.
          const tl::Value row_diagonal = row_position.to(kI64) + diagonal;
          const tl::Value lo = tl::maximum(row_diagonal - window_left, 0);
          const tl::Value hi = tl::minimum(row_diagonal + window_right, len - 1);
          const tl::Value last = diagonal + count - 1;
          const tl::Value lo_first = tl::maximum(diagonal - window_left, 0);
          const tl::Value hi_first = tl::minimum(diagonal + window_right, len - 1);
          const tl::Value lo_last = tl::maximum(last - window_left, 0);
          const tl::Value hi_last = tl::minimum(last + window_right, len - 1);

          // Scores are computed transposed, Sᵀ = K Qᵀ [keys, rows]: the key tile is the product's
          // left operand (float32 keys are read in place) and Qᵀ is formed once per item.
          const tl::Value query_rows =
              tl::reshape(tl::load(tq, {np, 1, ng, dt}, {q_row, kvh, g0, 0}), {rows, dt});
          const tl::Value query_t = tl::transpose(bf16 ? query_rows : as_f32(query_rows) * scale2);
          const tl::Value lo_t = tl::reshape(lo, {1, rows}), hi_t = tl::reshape(hi, {1, rows});
          // ALiBi's slope · log2 e per row (zeros without ALiBi: one multiply-add per score
          // instead of a specialisation more).
          const tl::Value slope =
              tl::reshape(tl::broadcast_to(tl::load(ts, {1, ng}, {kvh, g0}), {np, ng}), {1, rows}) *
              kLog2e;
          // The row statistics, one column per row.
          tl::Var m = tl::full({1, rows}, -INFINITY, kF32);
          tl::Var l = tl::zeros({1, rows}, kF32);
          tl::Var o = tl::zeros({rows, dt}, kF32);
          // Key j lies in row j % block_size (plus the packed sequence's base) of block
          // table[b, j / block_size] (a packed sequence: one block past every key).
          const auto block_of = [&](const tl::Value& j) {
            return scalar_at(tt, {b, tl::floordiv(j, block_size)});
          };
          const auto row_of = [&](const tl::Value& j) { return base + j % block_size; };
          // Tiles of nk keys from the piece holding lo(first) to hi(last), each gathered as
          // ng_pieces pieces of np_rows rows (a piece never crosses a cache block).
          const tl::Value first = tl::floordiv(lo_first, np_rows) * np_rows;
          const tl::Value end = hi_last + 1;
          const auto gather = [&](const KvView& kv, const tl::Value& j0, const tl::Value& scale) {
            std::vector<tl::Value> pieces;
            for (int g : tl::static_range(static_cast<int>(ng_pieces))) {
              const tl::Value j = j0 + g * np_rows;
              pieces.push_back(
                  load_rows(kv, np_rows, dt, block_of(j), row_of(j), kvh, scale, bf16));
            }
            return pieces.size() == 1 ? pieces[0] : tl::concat(pieces, 0);
          };
          // Sᵀ of the tile and acc + P·V of its values: with several pieces, one product per
          // piece, its key or value rows read in place (no gathered copy), the scores
          // concatenated and the P·V products added up.
          const auto piece_key = [&](const tl::Value& j0, int g) { return j0 + g * np_rows; };
          const auto scores = [&](const tl::Value& j0) {
            if (ng_pieces == 1) return tl::matmul(gather(kk, j0, k_scale), query_t);
            std::vector<tl::Value> parts;
            for (int g : tl::static_range(static_cast<int>(ng_pieces))) {
              const tl::Value j = piece_key(j0, g);
              parts.push_back(tl::matmul(
                  load_rows(kk, np_rows, dt, block_of(j), row_of(j), kvh, k_scale, bf16), query_t));
            }
            return tl::concat(parts, 0);
          };
          const auto add_pv = [&](const tl::Value& acc, const tl::Value& p_t, const tl::Value& j0) {
            if (ng_pieces == 1) return tl::matmul_acc(acc, p_t, gather(vv, j0, v_scale));
            tl::Value sum = acc;
            for (int g : tl::static_range(static_cast<int>(ng_pieces))) {
              const tl::Value j = piece_key(j0, g);
              sum = tl::matmul_acc(
                  sum, tl::copy(p_t, {rows, np_rows}, {0, g * np_rows}),
                  load_rows(vv, np_rows, dt, block_of(j), row_of(j), kvh, v_scale, bf16));
            }
            return sum;
          };
          for (tl::Value t : tl::range(tl::ceildiv(end - first, nk))) {
            const tl::Value j0 = first + t * nk;
            const tl::Value n = tl::minimum(end - j0, nk);  // keys in this tile
            // Every row sees every key of a full tile inside [lo(last), hi(first)].
            const tl::Value edge =
                tl::logical_or(n < nk, tl::logical_or(j0<lo_last, j0 + (nk - 1)> hi_first));
            tl::Var s = scores(j0);
            if (bf16) s = s * scale2;
            s = s + (key_lane + (j0 - (len - 1))).to(kF32) * slope;
            tl::if_(edge, [&] {
              const tl::Value key = key_lane.to(kI64) + j0;
              const tl::Value seen = tl::logical_and(key >= lo_t, key <= hi_t);
              s = tl::where(tl::logical_and(seen, key < j0 + n), s, -INFINITY);
            });
            const tl::Value m_new = tl::maximum(m, tl::reduce_max(s, {0}, true));
            const tl::Value m_use = tl::where(m_new == -INFINITY, 0.0f, m_new);
            const tl::Value alpha = tl::exp2(m - m_use);
            const tl::Value p = tl::exp2(s - m_use);  // [keys, rows]
            l = l * alpha + tl::reduce_sum(p, {0}, true);
            m = m_new;
            const tl::Value p_t = bf16 ? tl::transpose(p).to(dtype) : tl::transpose(p);
            const tl::Value alpha_rows = tl::reshape(alpha, {rows, 1});
            // Values used by the product alone: read in place where their rows allow, bfloat16
            // ones kept bfloat16. A masked key's zero probability times its NaN or Inf value
            // would be NaN (value rows past the tile's keys may be another sequence's): a tile
            // crossing an edge whose values hold any is multiplied again with those values as
            // zeros, and the loop below adds each row's visible ones (p · v; 0 · Inf is NaN
            // there, as in p · V).
            tl::Var o_next = add_pv(o * alpha_rows, p_t, j0);
            tl::Var careful = n < 0;  // false
            tl::if_(edge, [&] {
              const tl::Value values = gather(vv, j0, v_scale);
              const tl::Value bad = tl::logical_or(tl::isnan(values), tl::isinf(values));
              tl::if_(tl::any(bad), [&] {
                careful = tl::any(tl::logical_and(bad, key_lane < n));
                const tl::Value zeroed =
                    tl::where(tl::logical_or(bad, key_lane >= n), 0.0f, values);
                o_next = tl::matmul_acc(o * alpha_rows, p_t, zeroed);
              });
            });
            o = o_next;
            tl::if_(careful, [&] {
              for (tl::Value j : tl::range(n)) {
                const tl::Value pj = tl::reshape(
                    tl::reduce_sum(tl::where(key_lane == j, p, 0.0f), {0}, true), {rows, 1});
                const tl::Value key = j0 + j;
                const tl::Value vj = load_rows(vv, 1, dt, block_of(key), row_of(key), kvh, v_scale);
                const tl::Value nonfinite =
                    tl::where(tl::logical_or(tl::isnan(vj), tl::isinf(vj)), vj, 0.0f);
                const tl::Value seen = tl::logical_and(key >= lo, key <= hi);
                o = o + tl::where(seen, pj * nonfinite, 0.0f);
              }
            });
          }
          const tl::Value sees = lo <= hi;
          const tl::Value sum = tl::reshape(l, {rows, 1});
          const tl::Value inv = tl::where(sum > 0.0f, 1.0f / sum,
                                          tl::where(tl::logical_or(sees, sum != 0.0f), NAN, 0.0f));
          const tl::Value result = tl::reshape(o * inv, {np, 1, ng, dt});
          {
            const tl::Mask mask(count * (ng * dt));
            tl::store(as_dtype(result, dtype), to, {q_row, kvh, g0, 0});
          }
          // ln of Σ e^(score) = (m + log2 l) · ln 2: -inf for a row without keys (m = -inf,
          // l = 0), NaN after a NaN or +inf score.
          const tl::Mask mask(count * ng);
          tl::store(tl::reshape((m + tl::log2(l)) * kLn2, {np, 1, ng}), tl_lse, {q_row, kvh, g0});
        }
      },
      kFastMath);
  return kernel;
}

tl::Pointer writable(const void* data, DataType dtype) {
  return tl::Pointer{const_cast<void*>(data), dtype};  // NOLINT: the kernel only reads it
}

}  // namespace

void launch_attention(const AttentionLaunch& a, ThreadPool& pool) {
  const auto n_items = static_cast<std::int64_t>(a.items.size()) / kItemFields;
  if (n_items == 0) return;
  // Columns in whole 128-column tiles, split pieces never cut: each distinct tile width is a
  // kernel to compile, and head sizes of 64 or less (half the work padding) are the fewer.
  std::int64_t head_tile = round_up(a.head_size, 128);
  for (std::int64_t split : {a.key.split, a.value.split}) {
    if (split > 0 && head_tile % split != 0) {
      head_tile = round_up(a.head_size, std::lcm<std::int64_t>(128, split));
    }
  }
  // Key tiles of 64: packed keys one piece of 64 rows; paged keys gathered from pieces that never
  // cross a cache block, the largest power of two up to 16 dividing the block size (vLLM's 16,
  // 32, ...: 4 pieces of 16; one specialisation for all of those), at most 8 pieces a tile.
  std::int64_t piece_rows = 64, pieces = 1;
  if (a.block_size > 0) {
    piece_rows = 16;
    while (a.block_size % piece_rows != 0) piece_rows /= 2;
    pieces = std::min<std::int64_t>(64 / piece_rows, 8);
  }
  static const std::int64_t kZero = 0;
  const bool paged = a.block_size > 0;
  const std::int64_t table_rows =
      paged ? static_cast<std::int64_t>(a.table.size()) / a.table_cols : 1;
  const void* table = paged ? static_cast<const void*>(a.table.data()) : &kZero;
  const std::vector<float> no_slopes(static_cast<std::size_t>(a.kv_heads * a.group), 0.0f);
  const std::vector<float>& slopes = a.alibi.empty() ? no_slopes : a.alibi;
  const auto bound = [](std::int64_t w) { return w < 0 ? kUnbounded : w; };
  // Without a requested log-sum-exp the kernel writes one into scratch (one float per query row
  // and head, against a specialisation more).
  std::vector<float> no_lse;
  tl::Pointer lse = a.lse;
  std::array<std::int64_t, 2> lse_strides = a.lse_strides;
  if (lse.data == nullptr) {
    no_lse.resize(static_cast<std::size_t>(a.query_rows * a.kv_heads * a.group));
    lse = tl::Pointer{no_lse.data(), kF32};
    lse_strides = {1, a.kv_heads * a.group};
  }
  const KvOperand &key = a.key, &value = a.value;
  attention_kernel().launch_on(
      pool, std::min<std::int64_t>(pool.num_threads(), n_items), a.query, key.data, value.data,
      a.output, lse, writable(a.items.data(), kI64), writable(table, kI64),
      writable(slopes.data(), kF32), n_items, a.query_rows, lse_strides[0], lse_strides[1],
      a.kv_heads, a.group, a.head_size, a.query_strides[0], a.query_strides[1], a.query_strides[2],
      a.output_strides[0], a.output_strides[1], a.output_strides[2], key.blocks, key.rows,
      key.strides[0], key.strides[1], key.strides[2], key.strides[3], key.strides[4], value.blocks,
      value.rows, value.strides[0], value.strides[1], value.strides[2], value.strides[3],
      value.strides[4], table_rows, paged ? a.table_cols : std::int64_t{1},
      paged ? a.block_size : kUnbounded, bound(a.window_left), bound(a.window_right),
      static_cast<float>(a.scale * kLog2e), key.scale, value.scale, a.positions, a.heads_per_tile,
      head_tile, piece_rows, pieces, key.split, value.split);
}

}  // namespace tileops::ops::cpu::tl_impl
