// The cpu code generator's printer: elementwise ops and casts, each a flat loop over its result
// (or strided loops when an operand is broadcast), printing the element expressions of
// codegen_elements.cc; a fused result prints nothing (its consumer evaluates it). Only reductions
// and matmul reorder sums: elementwise results equal the interpreter's (codegen_elements.cc).
#include "src/tl/cpu/elements.h"
#include "src/tl/cpu/emitter.h"
#include "src/tl/interp/buffer.h"

namespace tileops::tl::cpu {

Strides row_major(const std::vector<std::int64_t>& shape) {
  return interp::row_major_strides(shape);
}

// Strides of `shape` read as if broadcast to `out` (0 on broadcast dims), aligned right.
Strides broadcast_strides(const std::vector<std::int64_t>& shape,
                          const std::vector<std::int64_t>& out) {
  Strides s(out.size(), 0);
  const Strides own = row_major(shape);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s[out.size() - shape.size() + i] = shape[i] == 1 ? 0 : own[i];
  }
  return s;
}

void Emitter::strided_loops(const std::vector<std::int64_t>& shape,
                            const std::vector<Strides>& strides, const Strides& bases,
                            const std::function<void(const std::vector<std::string>&)>& body) {
  const std::size_t rank = shape.size();
  open("");
  for (std::size_t d = 0; d < rank; ++d) {
    const std::string i = "tl_j" + std::to_string(d);
    open(cat({"for (i64 ", i, " = 0; ", i, " < ", std::to_string(shape[d]), "; ++", i, ")"}));
  }
  const Strides own = row_major(shape);
  std::string k = "0";
  for (std::size_t d = 0; d < rank; ++d)
    k += " + tl_j" + std::to_string(d) + " * " + std::to_string(own[d]);
  line() << "const i64 tl_k = " << k << ";\n";
  std::vector<std::string> index;
  for (std::size_t s = 0; s < strides.size(); ++s) {
    std::string e = std::to_string(bases[s]);
    for (std::size_t d = 0; d < rank; ++d) {
      if (strides[s][d] != 0)
        e += " + tl_j" + std::to_string(d) + " * " + std::to_string(strides[s][d]);
    }
    index.push_back(e);
  }
  body(index);
  for (std::size_t d = 0; d < rank; ++d) close();
  close();
}

void Emitter::elementwise_op(const Op& o) {
  const int res = o.results[0];
  const Type& rt = type(res);
  const ValuePlan& p = plan(res);
  if (rt.kind != TypeKind::kTile) {
    std::vector<std::string> x;
    for (int id : o.operands) x.push_back(name(id));
    line() << "const " << compute_type(rt.dtype) << " " << name(res) << " = "
           << elementwise_expr(f_, o, x) << ";\n";
    return;
  }
  if (p.fused) return;  // its consumer evaluates it (plan_fusion.cc)
  if (p.in_place_operand >= 0) {
    line() << compute_type(rt.dtype) << "* const " << name(res) << " = " << name(p.in_place_operand)
           << ";\n";
  } else {
    declare(res);
  }
  if (is_flat(f_, o)) {
    const ElementFn element = [&](const std::string& i, const LaneBlocks* lanes) {
      return elements_.of(o, i, lanes);
    };
    // A row sum of the result computed in the same loop (softmax: exp, then its sum), so the
    // result is not read back; its store, when planned so, is this loop's too (plan_sinks.cc).
    if (p.summed != nullptr) {
      const std::string out = declare_reduced(*p.summed);
      std::string sink = name(res);
      if (const Op* s = p.sunk_store; s != nullptr) {
        const std::string t = name(s->operands[1]);
        std::vector<std::string> offsets;
        for (std::size_t d = 0; d < rt.shape.size(); ++d)
          offsets.push_back(name(s->operands[2 + d]));
        const auto [inside, at_] = contiguous_tile(t, rt.shape, offsets, false);
        sink = name(res) + "_sink";
        line() << "const bool " << name(res) << "_sunk = " << inside << ";\n";
        line() << "float* const " << sink << " = " << name(res) << "_sunk ? " << t << " + (" << at_
               << ") : " << name(res) << ";\n";
      }
      open("");
      sum_runs(*p.summed, element, lane_blocks_of_op(f_, plan_.values, o), sink, out);
      close();
      return;
    }
    flat_loop(name(res), rt.size(), rt.dtype,
              [&](const std::string& i) { return element(i, nullptr); });
    return;
  }
  std::vector<Strides> strides;
  for (int id : o.operands) strides.push_back(broadcast_strides(type(id).shape, rt.shape));
  strided_loops(rt.shape, strides, Strides(strides.size(), 0),
                [&](const std::vector<std::string>& index) {
                  std::vector<std::string> x;
                  for (std::size_t i = 0; i < o.operands.size(); ++i)
                    x.push_back(at(o.operands[i], index[i]));
                  line() << name(res) << "[tl_k] = " << elementwise_expr(f_, o, x) << ";\n";
                });
}

void Emitter::cast_op(const Op& o) {
  const int res = o.results[0];
  const Type& rt = type(res);
  if (rt.kind != TypeKind::kTile) {
    line() << "const " << compute_type(rt.dtype) << " " << name(res) << " = "
           << cast_expr(f_, o, name(o.operands[0])) << ";\n";
    return;
  }
  if (plan(res).fused) return;  // its consumer evaluates it (plan_fusion.cc)
  declare(res);
  flat_loop(name(res), rt.size(), rt.dtype,
            [&](const std::string& i) { return elements_.of(o, i); });
}

void Emitter::flat_loop(const std::string& dst, std::int64_t n, DataType dtype,
                        const std::function<std::string(const std::string&)>& element) {
  const std::string v = element("k");
  // The element's value before its outer rounding to bfloat16, if it ends with one.
  const auto unrounded = [&](const std::string& e) { return strip_round(dtype, "(" + e + ")"); };
  const std::int64_t whole =
      dtype == DataType::kBFloat16 && unrounded(v) != "(" + v + ")" ? n / 64 * 64 : 0;
  if (whole > 0) {
    line() << "for (i64 tl_b = 0; tl_b < " << whole
           << "; tl_b += 64) { alignas(32) float tl_t[64]; for (int q = 0; q < 64; ++q) tl_t[q] = "
           << unrounded(element("tl_b + q")) << "; tl_round_bf16_64(" << dst
           << " + tl_b, tl_t); }\n";
  }
  if (whole < n) {
    line() << "for (i64 k = " << whole << "; k < " << n << "; ++k) " << dst << "[k] = " << v
           << ";\n";
  }
}

}  // namespace tileops::tl::cpu
