// The cpu code generator: reductions, cumsum and sort. The general form walks the input in
// row-major order exactly as the interpreter does (same accumulation order, so bit-identical);
// reductions of the innermost contiguous dims of float tiles (row sums, maxima, means) use the
// runtime's multi-accumulator loops instead, which vectorise and differ only in the order of double
// sums.
#include <limits>
#include <utility>

#include "src/tl/cpu/emitter.h"
#include "src/tl/interp/buffer.h"

namespace tileops::tl::cpu {

namespace {

// The least (or greatest) value of an integer dtype as a literal of the generated source.
std::string int_limit(DataType dtype, bool greatest) {
  if (dtype == DataType::kBool || dtype == DataType::kUInt8) return greatest ? "255" : "0";
  if (dtype == DataType::kInt64) {
    return greatest ? "0x7FFFFFFFFFFFFFFFll" : "(-0x7FFFFFFFFFFFFFFFll - 1)";
  }
  const std::int64_t top = (std::int64_t{1} << (8 * size_of(dtype) - 1)) - 1;
  return greatest ? std::to_string(top) + "ll" : "(" + std::to_string(-top) + "ll - 1)";
}

// The call that makes a sort key of a compute type's value (tl_runtime.h), unclosed, and whether
// its keys are 64-bit.
std::pair<std::string, bool> sort_key(const std::string& compute) {
  if (compute == "float") return {"tl_sort_key_f(", false};
  if (compute == "double") return {"tl_sort_key_d(", true};
  if (compute == "i64") return {"tl_sort_key_l(", true};
  return {"tl_sort_key_i((i32)", false};  // narrower integers widen exactly
}

}  // namespace

std::string Emitter::declare_reduced(const Op& o) {
  const int res = o.results[0];
  const Type& rt = type(res);
  if (rt.kind == TypeKind::kTile) {
    declare(res);
    return name(res);
  }
  line() << compute_type(rt.dtype) << " " << name(res) << ";\n";
  return "(&" + name(res) + ")";
}

// Each output is one contiguous run of `count`, summed with eight double accumulators, lane q
// taking elements q, q + 8, ... (two sets of them over 16-element steps, added at the end), 64
// terms per loop step; runs of non-negative terms add blocks of 64 in float32 first (tl_acc64:
// within 3 float32 roundings, relative, of the exact block sum). Under fast_math every run adds
// its blocks in float32 lanes, widened every 1024 terms (tl_sum64).
void Emitter::sum_runs(const Op& r, const ElementFn& value, const std::vector<int>& blocks,
                       const std::string& sink, const std::string& out) {
  const Type& xt = type(r.operands[0]);
  const Type& rt = type(r.results[0]);
  const std::int64_t count = suffix_run(r);
  const std::string c = std::to_string(count);
  const bool vec = std::string(compute_type(xt.dtype)) == "float";  // explicit vectors
  const bool nonneg = plan(r.operands[0]).nonnegative;
  const std::int64_t in_blocks = vec ? count - count % 64 : 0;
  const std::int64_t tail16 = in_blocks + (count - in_blocks) / 16 * 16;
  const std::int64_t tail = count - count % 8;
  const std::string i = "o * " + c + " + k", iq = i + " + q";
  // dst = element idx (stored to the sink too).
  auto take = [&](const std::string& dst, const std::string& idx,
                  const LaneBlocks* lanes = nullptr) {
    const std::string v = value(idx, lanes);
    return sink.empty() ? cat({dst, " = ", v, ";"})
                        : cat({"{ ", dst, " = ", v, "; ", sink, "[", idx, "] = ", dst, "; }"});
  };
  open("for (i64 o = 0; o < " + std::to_string(rt.size()) + "; ++o)");
  if (vec) {
    line() << "tl_d8 tl_lo = {}, tl_hi = {};\n";
    if (in_blocks > 0) {
      const LaneBlocks lanes{iq, blocks};
      const std::string body = take("tl_t[q]", iq, &lanes);
      const std::string fills = lane_block_fills(f_, blocks, "o * " + c + " + k");
      // A sink never overlaps what the lane loop reads other than element for element (a tile
      // read in place does not overlap a stored tensor, or is updated in place): no alias test.
      const char* ivdep = sink.empty() ? "" : "_Pragma(\"GCC ivdep\") ";
      line() << "tl_f16 tl_f[4] = {};\n";
      line() << "for (i64 k = 0; k < " << in_blocks << "; k += 64) { "
             << advance_hints(64, xt.size()) << fills << "float tl_t[64]; " << ivdep
             << "for (int q = 0; q < 64; ++q) " << body << " tl_sum64<"
             << (nonneg ? "true" : "false") << ">(tl_f, tl_lo, tl_hi, tl_t, k); }\n";
      line() << "tl_sum_flush(tl_f, tl_lo);\n";
    }
    if (tail16 > in_blocks) {
      line() << "for (i64 k = " << in_blocks << "; k < " << tail16
             << "; k += 16) { float tl_t[16]; "
             << "for (int q = 0; q < 16; ++q) " << take("tl_t[q]", iq)
             << " tl_acc16(tl_lo, tl_hi, tl_t); }\n";
    }
    if (tail > tail16) {
      line() << "for (i64 k = " << tail16 << "; k < " << tail << "; k += 8) { float tl_t[8]; "
             << "for (int q = 0; q < 8; ++q) " << take("tl_t[q]", iq)
             << " tl_acc8(tl_lo, tl_t); }\n";
    }
    line() << "double tl_a[8];\n";
    line() << "tl_lanes(tl_lo, tl_hi, tl_a);\n";
  } else {
    line() << "double tl_a[8] = {0, 0, 0, 0, 0, 0, 0, 0};\n";
    line() << "for (i64 k = 0; k < " << tail << "; k += 8) for (int q = 0; q < 8; ++q) "
           << "tl_a[q] += (double)" << value(iq, nullptr) << ";\n";
  }
  if (tail < count) {
    line() << "for (i64 k = " << tail << "; k < " << c << "; ++k) { " << compute_type(xt.dtype)
           << " tl_v; " << take("tl_v", i) << " tl_a[k & 7] += (double)tl_v; }\n";
  }
  const std::string sum =
      "(((tl_a[0] + tl_a[4]) + (tl_a[1] + tl_a[5])) + ((tl_a[2] + tl_a[6]) + (tl_a[3] + "
      "tl_a[7])))";
  const bool mean = r.as<ReduceAttrs>().op == ReduceOp::kMean;
  line() << out << "[o] = " << round_double(rt.dtype, mean ? sum + " / (double)" + c : sum)
         << ";\n";
  close();
}

void Emitter::reduce_op(const Op& o) {
  const int res = o.results[0];
  if (plan(res).computed_by_producer) return;  // in its operand's loop (plan_sinks.cc)
  const int x = o.operands[0];
  const Type& xt = type(x);
  const Type& rt = type(res);
  const ReduceAttrs& attrs = o.as<ReduceAttrs>();
  const ReduceOp op = attrs.op;
  const std::size_t rank = xt.shape.size();
  std::vector<bool> reduced(rank, attrs.dims.empty());
  for (std::int64_t d : attrs.dims) reduced[d < 0 ? d + static_cast<std::int64_t>(rank) : d] = true;
  std::vector<std::int64_t> kept;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : xt.shape[d]);
    count *= reduced[d] ? xt.shape[d] : 1;
  }
  const std::int64_t n_out = rt.size();
  const bool fl = is_floating(xt.dtype);
  const std::string xn = xt.kind == TypeKind::kTile ? name(x) : "(&" + name(x) + ")";
  const std::string out = declare_reduced(o);
  open("");
  // Trailing reduced dims of a float tile: each output is one contiguous run of `count`, summed
  // (or searched) with vectors of accumulators (sum_runs; below for max and min).
  // The loop reads the input through at(), so a fused producer is evaluated in it.
  const std::string c = std::to_string(count);
  if (suffix_run(o) != 0 && (op == ReduceOp::kSum || op == ReduceOp::kMean)) {
    const ElementFn element = [&](const std::string& i, const LaneBlocks* lanes) {
      return elements_.at(x, i, lanes);
    };
    sum_runs(o, element, lane_blocks(f_, plan_.values, x), "", out);
    close();
    return;
  }
  if (suffix_run(o) != 0) {
    open("for (i64 o = 0; o < " + std::to_string(n_out) + "; ++o)");
    const std::string e = at(x, "o * " + c + " + k"), eq = at(x, "o * " + c + " + k + q");
    const std::string mx = op == ReduceOp::kMax ? "true" : "false";
    const std::string ct = compute_type(xt.dtype);
    const std::string init = "(" + ct + ")" + (op == ReduceOp::kMax ? "-" : "") + "__builtin_inf()";
    if (ct == "float") {
      // Two 16-lane vectors of accumulators over runs of 32 (a compare-and-select chain per
      // vector would bound the loop by its latency), merged, then their 16 lanes; ties keep the
      // first. First without NaN handling, summing the elements into a probe; a NaN probe
      // reruns the run with it (tl_plain16).
      const std::string tail32 = std::to_string(count - count % 32);
      const std::string reset = cat({"tl_mv[0] = tl_mv[1] = tl_fill16(", init, ");\n"});
      line() << "tl_f16 tl_mv[2], tl_probe[2] = {};\n";
      line() << reset;
      line() << "for (i64 k = 0; k < " << tail32 << "; k += 32) { " << advance_hints(32, xt.size())
             << "float tl_t[32]; for (int q = 0; q < 32; ++q) tl_t[q] = " << eq
             << "; tl_mv[0] = tl_plain16<" << mx << ">(tl_mv[0], tl_t, tl_probe[0]); tl_mv[1] = "
             << "tl_plain16<" << mx << ">(tl_mv[1], tl_t + 16, tl_probe[1]); }\n";
      open("if (tl_has_nan16(tl_probe[0], tl_probe[1]))");
      line() << reset;
      line() << "for (i64 k = 0; k < " << tail32 << "; k += 32) { "
             << "float tl_t[32]; for (int q = 0; q < 32; ++q) tl_t[q] = " << eq
             << "; tl_mv[0] = tl_better16<" << mx << ">(tl_mv[0], tl_t); tl_mv[1] = tl_better16<"
             << mx << ">(tl_mv[1], tl_t + 16); }\n";
      close();
      line() << "tl_mv[0] = tl_better16<" << mx << ">(tl_mv[0], (const float*)&tl_mv[1]);\n";
      line() << "float tl_m[16];\n";
      line() << "__builtin_memcpy(tl_m, &tl_mv[0], 64);\n";
      line() << "for (i64 k = " << tail32 << "; k < " << c << "; ++k) tl_m[k & 15] = tl_better<"
             << mx << ">(tl_m[k & 15], " << e << ");\n";
      line() << out << "[o] = tl_merge<" << mx << ", 16>(tl_m);\n";
    } else if (is_floating(xt.dtype)) {  // double
      const std::string tail = std::to_string(count - count % 8);
      line() << ct << " tl_m[8];\n";
      line() << "for (int q = 0; q < 8; ++q) tl_m[q] = " << init << ";\n";
      line() << "for (i64 k = 0; k < " << tail << "; k += 8) for (int q = 0; q < 8; ++q) "
             << "tl_m[q] = tl_better<" << mx << ">(tl_m[q], " << eq << ");\n";
      line() << "for (i64 k = " << tail << "; k < " << c << "; ++k) tl_m[k & 7] = tl_better<" << mx
             << ">(tl_m[k & 7], " << e << ");\n";
      line() << out << "[o] = tl_merge<" << mx << ", 8>(tl_m);\n";
    } else {
      // Integers: two 64-byte vectors of accumulators (64 int8 lanes, 32 int16, ...), which the
      // loop vectoriser keeps in registers; no NaN, so a plain compare-and-select.
      const std::int64_t lanes = 128 / compute_bytes(xt.dtype);
      const std::string l = std::to_string(lanes), tail = std::to_string(count - count % lanes);
      const std::string extreme = "(" + ct + ")" + int_limit(xt.dtype, op == ReduceOp::kMin);
      const std::string better = op == ReduceOp::kMax ? " > " : " < ";
      line() << ct << " tl_m[" << l << "];\n";
      line() << "for (int q = 0; q < " << l << "; ++q) tl_m[q] = " << extreme << ";\n";
      line() << "for (i64 k = 0; k < " << tail << "; k += " << l << ") for (int q = 0; q < " << l
             << "; ++q) { const " << ct << " v = " << eq << "; tl_m[q] = v" << better
             << "tl_m[q] ? v : tl_m[q]; }\n";
      line() << ct << " r = " << extreme << ";\n";
      line() << "for (int q = 0; q < " << l << "; ++q) r = tl_m[q]" << better
             << "r ? tl_m[q] : r;\n";
      line() << "for (i64 k = " << tail << "; k < " << c << "; ++k) { const " << ct << " v = " << e
             << "; r = v" << better << "r ? v : r; }\n";
      line() << out << "[o] = r;\n";
    }
    close();
    close();
    return;
  }
  // The float max or min of each column of a few (C dividing 16) over leading reduced dims
  // (decode's scores, keys x 4 query rows): 16 lanes, lane q taking column q % C, one vector
  // select per 16 elements (tl_better16), then each column's 16 / C lanes merged in lane order.
  // As for runs above, only which NaN or which signed zero of a tie survives may differ from the
  // interpreter's order.
  std::size_t leading = 0;
  while (leading < rank && reduced[leading]) ++leading;
  bool prefix = leading > 0;
  for (std::size_t d = leading; d < rank; ++d) prefix = prefix && !reduced[d];
  if (prefix && xt.kind == TypeKind::kTile && compute_type(xt.dtype) == std::string("float") &&
      (op == ReduceOp::kMax || op == ReduceOp::kMin) && n_out < 16 && 16 % n_out == 0 &&
      xt.size() % 16 == 0) {
    const std::string mx = op == ReduceOp::kMax ? "true" : "false";
    const std::string cols = std::to_string(n_out);
    line() << "tl_f16 tl_mv = tl_fill16(" << (op == ReduceOp::kMax ? "-" : "")
           << "__builtin_inf());\n";
    line() << "for (i64 k = 0; k < " << xt.size() << "; k += 16) tl_mv = tl_better16<" << mx
           << ">(tl_mv, " << xn << " + k);\n";
    line() << "float tl_m[16];\n";
    line() << "__builtin_memcpy(tl_m, &tl_mv, 64);\n";
    open("for (i64 o = 0; o < " + cols + "; ++o)");
    line() << "float r = tl_m[o];\n";
    line() << "for (i64 q = o + " << cols << "; q < 16; q += " << cols << ") r = tl_better<" << mx
           << ">(r, tl_m[q]);\n";
    line() << out << "[o] = " << round_double(rt.dtype, "r") << ";\n";
    close();
    close();
    return;
  }
  // General form: accumulators per output, the interpreter's element order.
  const bool arg = op == ReduceOp::kArgmax || op == ReduceOp::kArgmin;
  const bool extreme = op == ReduceOp::kMax || op == ReduceOp::kMin || arg;
  const bool maximum = op == ReduceOp::kMax || op == ReduceOp::kArgmax;
  // Integer sums and products wrap: they accumulate in u64 with plain + and * (GCC 12's loop
  // vectoriser miscompiled the signed/unsigned cast chain (i64)((u64)a + (u64)b) over 8x16 int8
  // tiles at -O3: tests/tl/tl_cpu_reduce_agreement_test.cc, narrow integer reductions).
  const bool wrapping = !fl && !arg && !extreme && op != ReduceOp::kAll && op != ReduceOp::kAny;
  // A float max or min is exact in its compute type: no widening per element (the column
  // maxima of the tl attention's transposed scores).
  const bool float_extreme = fl && extreme && !arg;
  const std::string acc_type = float_extreme ? compute_type(xt.dtype)
                               : fl || arg   ? "double"
                               : wrapping    ? "u64"
                                             : "i64";
  std::string init;
  if (extreme) {
    init = fl || arg
               ? "(" + acc_type + ")" + std::string(maximum ? "-" : "") + "__builtin_inf()"
               : std::string(maximum ? "(-0x7FFFFFFFFFFFFFFFll - 1)" : "0x7FFFFFFFFFFFFFFFll");
  } else {
    init = op == ReduceOp::kProd || op == ReduceOp::kAll ? "1" : "0";
  }
  line() << acc_type << " tl_acc[" << n_out << "];\n";
  on_stack(n_out * (arg ? 24 : 16));  // tl_acc, tl_pos (and tl_seen)
  line() << "i64 tl_pos[" << n_out << "];\n";
  line() << "for (i64 o = 0; o < " << n_out << "; ++o) { tl_acc[o] = " << init
         << "; tl_pos[o] = -1; }\n";
  if (arg) line() << "i64 tl_seen[" << n_out << "] = {};\n";
  std::vector<std::int64_t> ostrides = interp::row_major_strides(kept);
  for (std::size_t d = 0; d < rank; ++d) {
    if (reduced[d]) ostrides[d] = 0;
  }
  strided_loops(xt.shape, {ostrides}, {0}, [&](const std::vector<std::string>& index) {
    line() << "const i64 o = " << index[0] << ";\n";
    const std::string v = (float_extreme ? "(" + acc_type + ")"
                           : fl || arg   ? std::string("(double)")
                                         : std::string("(i64)")) +
                          xn + "[tl_k]";
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        line() << "tl_acc[o] = tl_acc[o] + " << (fl ? v : "(u64)" + v) << ";\n";
        break;
      case ReduceOp::kProd:
        line() << "tl_acc[o] = tl_acc[o] * " << (fl ? v : "(u64)" + v) << ";\n";
        break;
      case ReduceOp::kMax:
      case ReduceOp::kMin:
        line() << "tl_acc[o] = tl_better<" << (maximum ? "true" : "false") << ">(tl_acc[o], " << v
               << ");\n";
        break;
      case ReduceOp::kArgmax:
      case ReduceOp::kArgmin:
        line() << "{ const double v = " << v << "; const i64 pos = tl_seen[o]++;\n";
        line() << "  const bool nan_seen = tl_pos[o] >= 0 && tl_acc[o] != tl_acc[o];\n";
        line() << "  const bool better = v " << (maximum ? ">" : "<") << " tl_acc[o];\n";
        line() << "  if (!nan_seen && (tl_pos[o] < 0 || better || v != v)) { tl_acc[o] = v; "
                  "tl_pos[o] = pos; } }\n";
        break;
      case ReduceOp::kAll:
        line() << "tl_acc[o] = tl_acc[o] && " << v << " != 0;\n";
        break;
      case ReduceOp::kAny:
        line() << "tl_acc[o] = tl_acc[o] || " << v << " != 0;\n";
        break;
    }
  });
  std::string result;
  if (arg) {
    result = wrap_int(rt.dtype, "tl_pos[o]");
  } else if (op == ReduceOp::kMean) {
    result = round_double(
        rt.dtype, (fl ? "tl_acc[o]" : "(double)(i64)tl_acc[o]") + std::string(" / (double)") + c);
  } else if (fl) {
    result = round_double(rt.dtype, "tl_acc[o]");
  } else {
    result = wrap_int(rt.dtype, wrapping ? "(i64)tl_acc[o]" : "tl_acc[o]");
  }
  line() << "for (i64 o = 0; o < " << n_out << "; ++o) " << out << "[o] = " << result << ";\n";
  close();
}

void Emitter::cumsum_op(const Op& o) {
  const int res = o.results[0];
  const int x = o.operands[0];
  const Type& xt = type(x);
  const auto rank = static_cast<std::int64_t>(xt.shape.size());
  const std::int64_t given = o.as<AxisAttrs>().axis;
  const std::int64_t axis = given < 0 ? given + rank : given;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= xt.shape[d];
    if (d > axis) inner *= xt.shape[d];
  }
  const std::int64_t extent = xt.shape[axis];
  const bool fl = is_floating(xt.dtype);
  declare(res);
  open("for (i64 o = 0; o < " + std::to_string(outer) + "; ++o) for (i64 i = 0; i < " +
       std::to_string(inner) + "; ++i)");
  line() << (fl ? "double" : "u64") << " acc = 0;\n";  // u64: see reduce_op
  open("for (i64 j = 0; j < " + std::to_string(extent) + "; ++j)");
  line() << "const i64 e = (o * " << extent << " + j) * " << inner << " + i;\n";
  if (fl) {
    line() << "acc += (double)" << name(x) << "[e];\n";
    line() << name(res) << "[e] = " << round_double(xt.dtype, "acc") << ";\n";
  } else {
    line() << "acc = acc + (u64)(i64)" << name(x) << "[e];\n";
    line() << name(res) << "[e] = " << wrap_int(xt.dtype, "(i64)acc") << ";\n";
  }
  close();
  close();
}

// Each line along the axis is radix-sorted on keys (tl_sort_key_*, inverted for descending)
// carrying positions; the first k positions, or the values at them, are the result.
void Emitter::sort_op(const Op& o) {
  const int res = o.results[0];
  const int x = o.operands[0];
  const Type& xt = type(x);
  const SortAttrs& sort = o.as<SortAttrs>();
  const auto rank = static_cast<std::int64_t>(xt.shape.size());
  const std::int64_t axis = sort.axis < 0 ? sort.axis + rank : sort.axis;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= xt.shape[d];
    if (d > axis) inner *= xt.shape[d];
  }
  const std::int64_t extent = xt.shape[axis];
  const std::string n = std::to_string(extent), in = std::to_string(inner);
  const auto [key, wide] = sort_key(compute_type(xt.dtype));
  const char* key_type = wide ? "u64" : "u32";
  declare(res);
  const std::string k1 = fresh("tl_sk"), k2 = fresh("tl_sk"), p1 = fresh("tl_sp"),
                    p2 = fresh("tl_sp");
  line() << key_type << " " << k1 << "[" << n << "], " << k2 << "[" << n << "];\n";
  line() << "i32 " << p1 << "[" << n << "], " << p2 << "[" << n << "];\n";
  on_stack(2 * extent * (wide ? 8 : 4) + 2 * extent * 4);
  open("for (i64 o = 0; o < " + std::to_string(outer) + "; ++o) for (i64 i = 0; i < " + in +
       "; ++i)");
  const std::string e = "(o * " + n + " + j) * " + in + " + i";
  line() << "for (i64 j = 0; j < " << n << "; ++j) { " << k1
         << "[j] = " << (sort.descending ? "~" : "") << key << name(x) << "[" << e << "]); " << p1
         << "[j] = (i32)j; }\n";
  line() << "const i32* tl_pos = tl_radix_sort(" << k1 << ", " << p1 << ", " << k2 << ", " << p2
         << ", " << n << ");\n";
  const std::string to = "(o * " + std::to_string(sort.k) + " + j) * " + in + " + i";
  const std::string from = "(o * " + n + " + tl_pos[j]) * " + in + " + i";
  line() << "for (i64 j = 0; j < " << sort.k << "; ++j) " << name(res) << "[" << to
         << "] = " << (sort.indices ? "tl_pos[j]" : name(x) + "[" + from + "]") << ";\n";
  close();
}

}  // namespace tileops::tl::cpu
