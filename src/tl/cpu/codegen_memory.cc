// The cpu code generator: loads, stores and atomics. Every row of a tile is clipped to the
// tensor's bounds ([tl_lo, tl_hi) columns, rows outside skipped), so a load reads and a store
// writes only in-bounds elements; the contiguous case is a plain loop the compiler vectorises.

#include "src/tl/cpu/emitter.h"

namespace tileops::tl::cpu {
namespace {

std::string load_element(DataType d, const std::string& ref) {
  switch (d) {
    case DataType::kFloat16:
      return "tl_h2f(" + ref + ")";
    case DataType::kBFloat16:
      return "tl_bf2f(" + ref + ")";
    case DataType::kFloat8E5M2:
      return "tl_e5m2_f(" + ref + ")";
    case DataType::kFloat8E4M3FN:
      return "tl_e4m3_f(" + ref + ")";
    case DataType::kHiFloat8:  // tapered: decoded by the runtime
      return "(float)rt->read(&" + ref + ", " + std::to_string(static_cast<int>(d)) + ")";
    case DataType::kBool:
      return "(u8)(" + ref + " != 0)";
    default:
      return ref;
  }
}

// A statement storing compute-typed `v` into memory element `ref`.
std::string store_element(DataType d, const std::string& ref, const std::string& v) {
  switch (d) {
    case DataType::kFloat16:
      return ref + " = tl_f2h(" + v + ");";
    case DataType::kBFloat16:
      return ref + " = tl_f2bf(" + v + ");";
    case DataType::kFloat8E5M2:  // encoded inline (vectorises)
      return ref + " = tl_f2e5m2(" + v + ");";
    case DataType::kFloat8E4M3FN:
      return ref + " = tl_f2e4m3(" + v + ");";
    case DataType::kHiFloat8:
      return "rt->write(" + v + ", &" + ref + ", " + std::to_string(static_cast<int>(d)) + ");";
    default:
      return ref + " = " + v + ";";
  }
}

}  // namespace

int Emitter::open_rows(const std::string& t, const std::vector<std::int64_t>& shape,
                       const std::vector<std::string>& offsets) {
  const std::size_t rank = shape.size();
  std::string row = "0", in = "true", base = "0ull";
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    const std::string i = "tl_i" + std::to_string(d), g = "tl_g" + std::to_string(d);
    open(cat({"for (i64 ", i, " = 0; ", i, " < ", std::to_string(shape[d]), "; ++", i, ")"}));
    // Wraps only where offset + i passes 2^63 - 1, to a negative index: outside either way.
    line() << "const i64 " << g << " = (i64)((u64)" << offsets[d] << " + (u64)" << i << ");\n";
    row = cat({"(", row, ") * ", std::to_string(shape[d]), " + ", i});
    in += cat({" && ", g, " >= 0 && ", g, " < ", t, "_d", std::to_string(d)});
    base += cat({" + (u64)", g, " * (u64)", t, "_s", std::to_string(d)});
  }
  open("");
  const std::string last = std::to_string(rank - 1);
  const std::string width = std::to_string(shape.back());
  line() << "const i64 tl_row = " << row << ";\n";
  line() << "const bool tl_in = " << in << ";\n";
  line() << "const i64 tl_off = " << offsets.back() << ";\n";
  line() << "const i64 tl_lo = tl_col_lo(tl_off, " << width << ");\n";
  line() << "const i64 tl_hi = tl_in ? tl_col_hi(tl_off, " << t << "_d" << last << ", tl_lo, "
         << width << ") : tl_lo;\n";
  line() << "const i64 tl_st = " << t << "_s" << last << ";\n";
  // tl_base: column tl_lo's element minus tl_lo, so that column j in [tl_lo, tl_hi) is element
  // tl_base + j (tl_st == 1) or tl_base + tl_lo + (j - tl_lo) * tl_st, each inside the tensor and
  // exact; products with an offset outside it are never formed (an empty row uses none).
  line() << "const i64 tl_base = tl_lo < tl_hi ? (i64)((" << base
         << ") + (u64)(tl_off + tl_lo) * (u64)tl_st - (u64)tl_lo) : 0;\n";
  line() << "(void)tl_row;\n";
  return static_cast<int>(rank);
}

namespace {

// The dim of a matmul left operand's rows (read in place at any stride): the last leading dim
// over 1 (plan_loads.cc admits tiles with at most one), dim 0 for a 2-D tile.
std::size_t row_dim(const std::vector<std::int64_t>& shape) {
  std::size_t rows = 0;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d) {
    if (shape[d] > 1) rows = d;
  }
  return rows;
}

}  // namespace

std::pair<std::string, std::string> Emitter::contiguous_tile(
    const std::string& t, const std::vector<std::int64_t>& shape,
    const std::vector<std::string>& offsets, bool any_row_stride) const {
  std::string inside = "true", at_ = "0";
  std::int64_t rm = 1;
  const std::size_t rows = row_dim(shape);
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::string n = std::to_string(d), extent = std::to_string(shape[d]);
    // offset + extent <= size, without forming the sum (it may overflow).
    inside += cat({" && ", offsets[d], " >= 0 && ", offsets[d], " <= ", t, "_d", n, " - ", extent});
    if (shape[d] > 1 && !(any_row_stride && d == rows)) {
      inside += cat({" && ", t, "_s", n, " == ", std::to_string(rm)});
    }
    at_ += cat({" + ", offsets[d], " * ", t, "_s", n});
    rm *= shape[d];
  }
  return {inside, at_};
}

void Emitter::load_op(const Op& o) {
  const int res = o.results[0];
  const Type& tt = type(res);
  const ValuePlan& p = plan(res);
  const std::string t = name(o.operands[0]);
  std::vector<std::string> offsets;
  for (std::size_t d = 0; d < tt.shape.size(); ++d) offsets.push_back(name(o.operands[1 + d]));
  // A widened tile stays in its memory type (plan_loads.cc), as does one held as bfloat16 bits.
  const bool widen = p.widened || p.bits;
  const std::string ct = widen ? memory_type(tt.dtype) : compute_type(tt.dtype);
  std::string dst = name(res);
  const std::string buffer = cat({"alignas(64) ", ct, " "});
  const bool any_row_stride = p.any_row_stride;
  const std::int64_t buffer_bytes =
      tt.size() * (ct == memory_type(tt.dtype) ? static_cast<std::int64_t>(size_of(tt.dtype))
                                               : compute_bytes(tt.dtype));
  // The next iteration's tile lies <v>_pd elements on (0: no previous tile yet); the copy loop
  // prefetches its rows. Whatever the tensor's size: rows a stride apart stall the copy even
  // when they come from the last-level cache (a 4 MiB float8 matrix at 2048^3).
  const std::string pd = name(res) + "_pd";
  if (p.next_rows_prefetch) {
    const std::string prev = name(res) + "_po";
    hoisted_.push_back(cat({"i64 ", prev, " = 0; bool ", prev, "_set = false;"}));
    std::string origin = "0ull";
    for (std::size_t d = 0; d < offsets.size(); ++d)
      origin += cat({" + (u64)", offsets[d], " * (u64)", t, "_s", std::to_string(d)});
    line() << "i64 " << pd << " = 0;\n";
    line() << "{ const i64 tl_o = (i64)(" << origin << "); if (" << prev << "_set) " << pd
           << " = (i64)((u64)tl_o - (u64)" << prev << "); " << prev << " = tl_o; " << prev
           << "_set = true; }\n";
  }
  // Read in place (a pointer into global memory) when the run-time checks pass: the tile lies
  // inside the tensor, contiguous in its row-major order, and overlaps no tensor stored to while
  // it is live.
  if (p.read_in_place) {
    dst = name(res) + "_buf";
    line() << buffer << dst << "[" << tt.size() << "];\n";
    on_stack(buffer_bytes);
    auto [direct, at_] = contiguous_tile(t, tt.shape, offsets, any_row_stride);
    for (int u : p.overlap_checks) {
      const std::string un = name(u);
      direct += cat({" && (", un, "_hi <= ", t, "_lo || ", t, "_hi <= ", un, "_lo)"});
    }
    line() << "const bool " << name(res) << "_direct = " << direct << ";\n";
    line() << ct << "* const " << name(res) << " = " << name(res) << "_direct ? " << t << " + ("
           << at_ << ") : " << dst << ";\n";
    if (any_row_stride) {
      line() << "const i64 " << name(res) << "_ld = " << name(res) << "_direct ? " << t << "_s"
             << row_dim(tt.shape) << " : " << tt.shape.back() << ";\n";
    }
    if (p.next_tile_cursor) {
      const std::int64_t bytes = tt.size() * static_cast<std::int64_t>(size_of(tt.dtype));
      const std::string v = name(res), pf = v + "_pf", prev = v + "_prev";
      hoisted_.push_back("u64 " + prev + " = 0;");
      line() << "u64 " << pf << " = 0, " << pf << "_end = 0;\n";
      // Only over tensors larger than an eighth of the last-level cache: smaller ones (a
      // block's scratch row) are read from cache, where the prefetches only cost
      // (bench/results/cpu-tuning.md).
      line() << "if (" << v << "_direct && " << t << "_bytes > TL_STREAM_BYTES / 8) { "
             << "const u64 tl_c = (u64)" << v << "; if (" << prev << " != 0) { " << pf
             << " = tl_c + (tl_c - " << prev << "); " << pf << "_end = " << pf << " + " << bytes
             << "; } " << prev << " = tl_c; }\n";
      // Lines per 64 lanes of the store loops that advance it: the tile's element size.
      prefetch_.push_back(cat({"tl_prefetch_lines<", std::to_string(size_of(tt.dtype)), ", 3>(", pf,
                               ", ", pf, "_end); "}));
    }
    open("if (!" + name(res) + "_direct)");
  } else if (widen) {
    line() << buffer << dst << "[" << tt.size() << "];\n";
    on_stack(buffer_bytes);
  } else {
    declare(res);
  }
  std::string pad = name(o.operands.back());
  if (widen) pad = cat({tt.dtype == DataType::kBFloat16 ? "tl_f2bf(" : "tl_f2h(", pad, ")"});
  const std::string width = std::to_string(tt.shape.back());
  const int loops = open_rows(t, tt.shape, offsets);
  line() << ct << "* const tl_dst = " << dst << " + tl_row * " << width << ";\n";
  line() << "for (i64 j = 0; j < tl_lo; ++j) tl_dst[j] = " << pad << ";\n";
  line() << "for (i64 j = tl_hi; j < " << width << "; ++j) tl_dst[j] = " << pad << ";\n";
  line() << "const " << memory_type(tt.dtype) << "* const tl_src = " << t << " + tl_base;\n";
  if (p.next_rows_prefetch) {
    const std::string elem = std::to_string(size_of(tt.dtype));
    line() << "if (" << pd
           << " != 0 && tl_st == 1 && tl_lo < tl_hi) tl_prefetch_span<false>((u64)(tl_src + "
           << "tl_lo) + (u64)" << pd << " * " << elem << "u, (u64)(tl_hi - tl_lo) * " << elem
           << "u);\n";
  }
  auto element = [&](const std::string& ref) { return widen ? ref : load_element(tt.dtype, ref); };
  line() << "if (tl_st == 1) { for (i64 j = tl_lo; j < tl_hi; ++j) tl_dst[j] = "
         << element("tl_src[j]") << "; }\n";
  line() << "else { for (i64 j = tl_lo; j < tl_hi; ++j) tl_dst[j] = "
         << element("tl_src[tl_lo + (j - tl_lo) * tl_st]") << "; }\n";
  for (int i = 0; i < loops; ++i) close();
  if (p.read_in_place) close();
}

void Emitter::store_op(const Op& o) {
  const int value = o.operands[0];
  // Written by the loop that produced the tile when its tile lay in place (plan_sinks.cc).
  if (plan(value).sunk_store == &o && !printing_unsunk_) {
    printing_unsunk_ = true;
    open("if (!" + name(value) + "_sunk)");
    store_op(o);
    close();
    printing_unsunk_ = false;
    return;
  }
  const Type& vt = type(value);
  const std::string t = name(o.operands[1]);
  const DataType d = type(o.operands[1]).dtype;
  const std::size_t rank = type(o.operands[1]).shape.size();
  std::vector<std::string> offsets;
  for (std::size_t i = 0; i < rank; ++i) offsets.push_back(name(o.operands[2 + i]));
  const bool atomic = o.kind == OpKind::kAtomic;
  const bool masked = atomic ? o.as<AtomicAttrs>().masked : o.as<StoreAttrs>().masked;
  const std::string mask = masked ? name(o.operands.back()) : "";
  auto write = [&](const std::string& ref, const std::string& v) {
    if (!atomic) return store_element(d, ref, v);
    if (o.as<AtomicAttrs>().op == AtomicOp::kAdd) {
      if (d == DataType::kFloat32) return "tl_atomic_add_f32(&" + ref + ", " + v + ");";
      if (d == DataType::kInt32) return "tl_atomic_add_i32(&" + ref + ", (i64)" + v + ");";
      if (d == DataType::kInt64) return "tl_atomic_add_i64(&" + ref + ", (i64)" + v + ");";
    }
    const bool fl = is_floating(d);
    return "rt->atomic(" + std::to_string(static_cast<int>(o.as<AtomicAttrs>().op)) + ", " +
           std::to_string(static_cast<int>(d)) + ", &" + ref + ", " +
           (fl ? "(double)" + v : "0.0") + ", " + (fl ? "0" : "(i64)" + v) + ");";
  };
  if (vt.kind != TypeKind::kTile) {  // one element at `offsets`
    std::string cond = mask.empty() ? "true" : mask + " > 0";
    std::string element = "0";
    for (std::size_t i = 0; i < rank; ++i) {
      const std::string n = std::to_string(i);
      cond += cat({" && ", offsets[i], " >= 0 && ", offsets[i], " < ", t, "_d", n});
      element += cat({" + ", offsets[i], " * ", t, "_s", n});
    }
    line() << "if (" << cond << ") { " << write(t + "[" + element + "]", name(value)) << " }\n";
    return;
  }
  const std::string width = std::to_string(vt.shape.back());
  if (atomic) {
    // A locked read-modify-write lets no later load pass it, so each destination line that
    // misses the cache would stall the additions on its own: every line of the destination
    // rows is fetched for writing first, the misses overlapping (split-K's partial tiles).
    const int rows = open_rows(t, vt.shape, offsets);
    line() << "if (tl_st == 1 && tl_lo < tl_hi) tl_prefetch_span<true>((u64)(" << t
           << " + tl_base + tl_lo), (u64)(tl_hi - tl_lo) * " << size_of(d) << "u);\n";
    for (int i = 0; i < rows; ++i) close();
  }
  const int loops = open_rows(t, vt.shape, offsets);
  line() << "i64 tl_end = tl_hi;\n";
  if (!mask.empty()) {  // a negative count masks every lane (and cannot overflow below)
    const std::string count = cat({"(", mask, " < 0 ? 0 : ", mask, ")"});
    line() << "if (" << count << " - tl_row * " << width << " < tl_end) tl_end = " << count
           << " - tl_row * " << width << ";\n";
  }
  // Element j of the row (a fused producer's expression is evaluated here).
  const std::string v = strip_round(d, at(value, "tl_row * " + width + " + j"));
  // The 64-lane loops read widened tiles as float32 blocks (plan.h's lane_blocks).
  const std::string base = "tl_row * " + width + " + j";
  const LaneBlocks lanes{base + " + q", lane_blocks(f_, plan_.values, value)};
  const std::string v8 = elements_.at(value, lanes.index, &lanes);
  const std::string widen8 = lane_block_fills(f_, lanes.tiles, base);
  line() << memory_type(d) << "* const tl_out = " << t << " + tl_base;\n";
  std::string next_tiles;  // the 64-lane loops below prefetch the next iteration's tiles
  for (const std::string& pf : prefetch_) next_tiles += pf;
  // Row stores stream when the tensors made so far (the kernel's working set, as far as it can
  // tell) exceed the last-level cache, which then cannot keep the output for its consumer anyway.
  std::string working_set = "0";
  for (const std::string& tensor : tensors_) working_set += cat({" + ", tensor, "_bytes"});
  const std::string streams = cat({"if (tl_st == 1 && ", working_set, " > TL_STREAM_BYTES)"});
  if (!atomic && d == DataType::kFloat32) {
    // Streaming: scalar up to a 64-byte boundary, then 64 lanes at a time, then a scalar tail.
    open(streams);
    line() << "i64 j = tl_lo;\n";
    line() << "for (; j < tl_end && (((u64)(tl_out + j)) & 63) != 0; ++j) tl_out[j] = " << v
           << ";\n";
    // Chunks of 64 through a stack buffer: the loop vectoriser handles a plain counted loop
    // over any fused expression best.
    const std::string prefetch = advance_hints(64, vt.size()) + next_tiles + widen8;
    line() << "for (; j + 64 <= tl_end; j += 64) { " << prefetch
           << "alignas(64) float tl_t[64]; for (int q = 0; q < 64; ++q) tl_t[q] = " << v8
           << "; tl_stream64(tl_out + j, tl_t); }\n";
    line() << "for (; j < tl_end; ++j) tl_out[j] = " << v << ";\n";
    close();
    line() << "else ";
    // Cached stores advance the same cursors (and widen 16-bit tiles) in 64-lane chunks, when
    // there are any.
    if (!prefetch.empty()) {
      open("if (tl_st == 1)");
      line() << "i64 j = tl_lo;\n";
      line() << "for (; j + 64 <= tl_end; j += 64) { " << prefetch
             << "_Pragma(\"GCC ivdep\") for (int q = 0; q < 64; ++q) tl_out[j + q] = " << v8
             << "; }\n";
      line() << "for (; j < tl_end; ++j) tl_out[j] = " << v << ";\n";
      close();
      line() << "else ";
    }
  } else if (!atomic && (d == DataType::kFloat16 || d == DataType::kBFloat16)) {
    // 64 lanes at a time: the fused expression into a float buffer, then narrowed (two plain
    // loops vectorise better than one mixing float math with 16-bit packing); streamed as the
    // float32 stores above (bfloat16 joined in registers, float16 through a 16-bit buffer).
    const std::string prefetch = advance_hints(64, vt.size()) + next_tiles + widen8;
    const std::string fill = cat(
        {"alignas(32) float tl_t[64]; for (int q = 0; q < 64; ++q) tl_t[q] = ", strip_round(d, v8),
         "; "});
    const auto narrow = [&](const std::string& dst) {
      return d == DataType::kBFloat16
                 ? "tl_f2bf64(" + dst + ", tl_t);"
                 : "for (int q = 0; q < 64; ++q) " + write(dst + "[q]", "tl_t[q]");
    };
    open(streams);
    line() << "i64 j = tl_lo;\n";
    line() << "for (; j < tl_end && (((u64)(tl_out + j)) & 63) != 0; ++j) " << write("tl_out[j]", v)
           << "\n";
    line() << "for (; j + 64 <= tl_end; j += 64) { " << prefetch << fill
           << (d == DataType::kBFloat16 ? "tl_f2bf64_stream(tl_out + j, tl_t);"
                                        : "alignas(64) u16 tl_h[64]; " + narrow("tl_h") +
                                              " tl_stream64_16(tl_out + j, tl_h);")
           << " }\n";
    line() << "for (; j < tl_end; ++j) " << write("tl_out[j]", v) << "\n";
    close();
    line() << "else ";
    open("if (tl_st == 1)");
    line() << "i64 j = tl_lo;\n";
    line() << "for (; j + 64 <= tl_end; j += 64) { " << prefetch << fill << narrow("(tl_out + j)")
           << " }\n";
    line() << "for (; j < tl_end; ++j) " << write("tl_out[j]", v) << "\n";
    close();
    line() << "else ";
  }
  line() << "if (tl_st == 1) { for (i64 j = tl_lo; j < tl_end; ++j) " << write("tl_out[j]", v)
         << " }\n";
  line() << "else { for (i64 j = tl_lo; j < tl_end; ++j) "
         << write("tl_out[tl_lo + (j - tl_lo) * tl_st]", v) << " }\n";
  for (int i = 0; i < loops; ++i) close();
}

// A cursor over the hinted tile when it lies in the tensor, contiguous in memory; otherwise the
// hint is dropped (the cursor is empty).
void Emitter::prefetch_op(const Op& o) {
  const std::string t = name(o.operands[0]);
  std::vector<std::string> offsets;
  std::int64_t elements = 1;
  const Extents& shape = o.as<ShapeAttrs>().shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    offsets.push_back(name(o.operands[1 + d]));
    elements *= shape[d];
  }
  const auto [inside, at_] = contiguous_tile(t, shape, offsets, false);
  const std::string h = fresh("tl_hint");
  const std::int64_t bytes =
      elements * static_cast<std::int64_t>(size_of(type(o.operands[0]).dtype));
  line() << "u64 " << h << " = 0, " << h << "_end = 0;\n";
  line() << "if (" << inside << ") { " << h << " = (u64)(" << t << " + (" << at_ << ")); " << h
         << "_end = " << h << " + " << bytes << "; }\n";
  hints_.push_back(h);
  hint_bytes_.push_back(bytes);
  hint_ops_.push_back(&o);
}

std::string Emitter::advance_hints(std::int64_t lanes, std::int64_t total) const {
  std::string code;
  for (std::size_t i = 0; i < hints_.size(); ++i) {
    const auto planned = plan_.hint_work.find(hint_ops_[i]);
    const std::int64_t work = planned == plan_.hint_work.end() ? total : planned->second;
    code += cat({"tl_prefetch_lines<", std::to_string(hint_lines(hint_bytes_[i], lanes, work)),
                 ", 2>(", hints_[i], ", ", hints_[i], "_end); "});
  }
  return code;
}

}  // namespace tileops::tl::cpu
