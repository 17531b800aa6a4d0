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
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8:
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
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
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
  std::string row = "0", in = "true", base = "0";
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    const std::string i = "tl_i" + std::to_string(d), g = "tl_g" + std::to_string(d);
    open(cat({"for (i64 ", i, " = 0; ", i, " < ", std::to_string(shape[d]), "; ++", i, ")"}));
    line() << "const i64 " << g << " = " << offsets[d] << " + " << i << ";\n";
    row = cat({"(", row, ") * ", std::to_string(shape[d]), " + ", i});
    in += cat({" && ", g, " >= 0 && ", g, " < ", t, "_d", std::to_string(d)});
    base += cat({" + ", g, " * ", t, "_s", std::to_string(d)});
  }
  open("");
  const std::string last = std::to_string(rank - 1);
  const std::string width = std::to_string(shape.back());
  line() << "const i64 tl_row = " << row << ";\n";
  line() << "const bool tl_in = " << in << ";\n";
  line() << "const i64 tl_base = " << base << ";\n";
  line() << "const i64 tl_off = " << offsets.back() << ";\n";
  line() << "const i64 tl_lo = tl_clamp(-tl_off, 0, " << width << ");\n";
  line() << "const i64 tl_hi = tl_in ? tl_clamp(" << t << "_d" << last << " - tl_off, tl_lo, "
         << width << ") : tl_lo;\n";
  line() << "const i64 tl_st = " << t << "_s" << last << ";\n";
  line() << "(void)tl_row; (void)tl_base;\n";
  return static_cast<int>(rank);
}

void Emitter::load_op(const Op& o) {
  const int res = o.results[0];
  const Type& tt = type(res);
  const std::string t = name(o.operands[0]);
  std::vector<std::string> offsets;
  for (std::size_t d = 0; d < tt.shape.size(); ++d) offsets.push_back(name(o.operands[1 + d]));
  declare(res);
  const std::string pad = name(o.operands.back());
  const std::string width = std::to_string(tt.shape.back());
  const int loops = open_rows(t, tt.shape, offsets);
  const std::string row = name(res) + " + tl_row * " + width;
  line() << compute_type(tt.dtype) << "* const tl_dst = " << row << ";\n";
  line() << "for (i64 j = 0; j < tl_lo; ++j) tl_dst[j] = " << pad << ";\n";
  line() << "for (i64 j = tl_hi; j < " << width << "; ++j) tl_dst[j] = " << pad << ";\n";
  line() << "const " << memory_type(tt.dtype) << "* const tl_src = " << t
         << " + tl_base + tl_off * tl_st;\n";
  line() << "if (tl_st == 1) { for (i64 j = tl_lo; j < tl_hi; ++j) tl_dst[j] = "
         << load_element(tt.dtype, "tl_src[j]") << "; }\n";
  line() << "else { for (i64 j = tl_lo; j < tl_hi; ++j) tl_dst[j] = "
         << load_element(tt.dtype, "tl_src[j * tl_st]") << "; }\n";
  for (int i = 0; i < loops; ++i) close();
}

void Emitter::store_op(const Op& o) {
  const int value = o.operands[0];
  const Type& vt = type(value);
  const std::string t = name(o.operands[1]);
  const DataType d = type(o.operands[1]).dtype;
  const std::size_t rank = type(o.operands[1]).shape.size();
  std::vector<std::string> offsets;
  for (std::size_t i = 0; i < rank; ++i) offsets.push_back(name(o.operands[2 + i]));
  const bool atomic = o.kind == OpKind::kAtomic;
  const std::string mask = o.flag ? name(o.operands.back()) : "";
  auto write = [&](const std::string& ref, const std::string& v) {
    if (!atomic) return store_element(d, ref, v);
    const bool fl = is_floating(d);
    return "rt->atomic(" + std::to_string(o.sub) + ", " + std::to_string(static_cast<int>(d)) +
           ", &" + ref + ", " + (fl ? "(double)" + v : "0.0") + ", " + (fl ? "0" : "(i64)" + v) +
           ");";
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
  const int loops = open_rows(t, vt.shape, offsets);
  line() << "i64 tl_end = tl_hi;\n";
  if (!mask.empty()) {
    line() << "if (" << mask << " - tl_row * " << width << " < tl_end) tl_end = " << mask
           << " - tl_row * " << width << ";\n";
  }
  line() << "const " << compute_type(vt.dtype) << "* const tl_val = " << name(value)
         << " + tl_row * " << width << ";\n";
  line() << memory_type(d) << "* const tl_out = " << t << " + tl_base + tl_off * tl_st;\n";
  if (!atomic && d == DataType::kFloat32) {
    line() << "if (tl_st == 1 && " << t
           << "_stream) { tl_stream_f32(tl_out + tl_lo, tl_val + tl_lo, "
           << "tl_end - tl_lo); }\n";
    line() << "else ";
  }
  line() << "if (tl_st == 1) { for (i64 j = tl_lo; j < tl_end; ++j) "
         << write("tl_out[j]", "tl_val[j]") << " }\n";
  line() << "else { for (i64 j = tl_lo; j < tl_end; ++j) "
         << write("tl_out[j * tl_st]", "tl_val[j]") << " }\n";
  for (int i = 0; i < loops; ++i) close();
}

}  // namespace tileops::tl::cpu
