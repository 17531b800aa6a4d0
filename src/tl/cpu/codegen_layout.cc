// The cpu code generator: data movement between tiles (reshape, broadcast, transpose, slice,
// concat) and matmul. Moves read their operand through at(), so a fused producer or a 16-bit
// tile kept in its memory type is evaluated in the move's loop; matmul accumulates in float32
// with the runtime's register-blocked FMA kernel (double for float64, the interpreter's order;
// bfloat16 operands with VDPBF16PS on AVX512-BF16 targets).
#include "src/tl/cpu/emitter.h"

namespace tileops::tl::cpu {

void Emitter::move_op(const Op& o) {
  const int res = o.results[0];
  const Type& rt = type(res);
  const int x = o.operands[0];
  const Type& xt = type(x);
  if (o.kind == OpKind::kReshape) {
    if (xt.kind == TypeKind::kTile) {
      const bool bits = plan(res).bits;  // then so is its operand (plan_values.cc)
      line() << (bits ? memory_type(rt.dtype) : compute_type(rt.dtype)) << "* const " << name(res)
             << " = " << name(x) << ";\n";
      // A matmul operand read in place at its rows' stride (plan_loads.cc).
      if (plan(res).any_row_stride) {
        line() << "const i64 " << name(res) << "_ld = " << name(x) << "_ld;\n";
      }
    } else {
      declare(res);
      line() << "for (i64 k = 0; k < " << rt.size() << "; ++k) " << name(res) << "[k] = " << name(x)
             << ";\n";
    }
    return;
  }
  if (o.kind == OpKind::kTranspose && plan(res).transposed_lhs) {
    // Not materialised: the matmul reads x as its left operand transposed, at x's row stride.
    // Counted as if it were: the runtime's fallback for products whose N is no multiple of 16
    // untransposes it into an array on the stack (tl_matmul_acc).
    on_stack(xt.size() * compute_bytes(xt.dtype));
    line() << "const float* const " << name(res) << " = " << name(x) << ";\n";
    line() << "const i64 " << name(res)
           << "_ld = " << (plan(x).any_row_stride ? name(x) + "_ld" : std::to_string(xt.shape[1]))
           << ";\n";
    return;
  }
  declare(res);
  if (o.kind == OpKind::kConcat) {
    const auto rank = static_cast<std::int64_t>(rt.shape.size());
    const std::int64_t given = o.as<AxisAttrs>().axis;
    const std::int64_t axis = given < 0 ? given + rank : given;
    const Strides out = row_major(rt.shape);
    std::int64_t base = 0;
    for (int id : o.operands) {
      strided_loops(type(id).shape, {out}, {base * out[axis]},
                    [&](const std::vector<std::string>& index) {
                      line() << name(res) << "[" << index[0] << "] = " << name(id) << "[tl_k];\n";
                    });
      base += type(id).shape[axis];
    }
    return;
  }
  Strides strides;
  std::int64_t base = 0;
  if (o.kind == OpKind::kBroadcast) {
    strides = xt.kind == TypeKind::kTile ? broadcast_strides(xt.shape, rt.shape)
                                         : Strides(rt.shape.size(), 0);
  } else if (o.kind == OpKind::kTranspose) {
    // A materialised 2-D tile of 4-byte elements in whole 8 x 8 blocks: the runtime's blocked
    // shuffles (a transposed matmul operand, the tl attention's Pᵀ).
    const ValuePlan& xp = plan(x);
    if (xt.kind == TypeKind::kTile && xt.shape.size() == 2 && xt.shape[0] % 8 == 0 &&
        xt.shape[1] % 8 == 0 && compute_bytes(xt.dtype) == 4 && !xp.fused && !xp.widened) {
      line() << "tl_transpose8<" << xt.shape[0] << ", " << xt.shape[1] << ">(" << name(res) << ", "
             << name(x) << ");\n";
      return;
    }
    const Strides in = row_major(xt.shape);
    const auto rank = static_cast<std::int64_t>(rt.shape.size());
    for (std::int64_t p : o.as<TransposeAttrs>().permutation)
      strides.push_back(in[p < 0 ? p + rank : p]);
  } else {  // slice
    strides = row_major(xt.shape);
    const Extents& offsets = o.as<SliceAttrs>().offsets;
    for (std::size_t d = 0; d < strides.size(); ++d) base += offsets[d] * strides[d];
  }
  strided_loops(rt.shape, {strides}, {base}, [&](const std::vector<std::string>& index) {
    line() << name(res) << "[tl_k] = " << at(x, index[0]) << ";\n";
  });
}

void Emitter::matmul_op(const Op& o) {
  const int res = o.results[0];
  const Type& at_ = type(o.operands[0]);
  const Type& bt = type(o.operands[1]);
  const std::int64_t m = at_.shape[0], k = at_.shape[1], n = bt.shape[1];
  const std::string a = name(o.operands[0]), b = name(o.operands[1]), r = name(res);
  // An operand read in place at any row stride has it in <a>_ld, <b>_ld (plan_loads.cc); so does
  // a left operand read transposed (a transpose not materialised: plan_values.cc).
  const bool trans_a = plan(o.operands[0]).transposed_lhs;
  const std::string lda =
      plan(o.operands[0]).any_row_stride || trans_a ? a + "_ld" : std::to_string(k);
  const std::string ldb = plan(o.operands[1]).any_row_stride ? b + "_ld" : std::to_string(n);
  // bfloat16 operands: the runtime's VDPBF16PS kernel where the target has AVX512-BF16. Operands
  // held as bits are widened into float arrays by the kernel where it takes float32 FMAs: counted
  // here as the float tiles they stand for. (A transposed left operand is never bits: its tile's
  // only use is the transpose; it is counted by the transpose, move_op.)
  const bool bf16_operands = at_.dtype == DataType::kBFloat16;
  const std::string bf16 = trans_a ? (bf16_operands ? ", true, true" : ", false, true")
                                   : (bf16_operands ? ", true" : "");
  if (plan(o.operands[0]).bits) on_stack(m * k * 4);
  if (plan(o.operands[1]).bits) on_stack(k * n * 4);
  if (o.as<MatmulAttrs>().accumulate && at_.dtype != DataType::kFloat64 &&
      (plan(o.operands[2]).consumable || plan(o.operands[2]).accumulated_in_place)) {
    // acc + a @ b into the accumulator itself (loop-carried, or made for this alone, plan.h):
    // nothing else reads it.
    line() << "float* const " << r << " = " << name(o.operands[2]) << ";\n";
    line() << "tl_matmul_acc<" << m << ", " << n << ", " << k << bf16 << ">(" << r << ", " << a
           << ", " << b << ", " << lda << ", " << ldb << ");\n";
    return;
  }
  declare(res);
  if (o.operands.size() > 2) {
    const int c = o.operands[2];
    strided_loops({m, n}, {broadcast_strides(type(c).shape, {m, n})}, {0},
                  [&](const std::vector<std::string>& index) {
                    line() << name(res) << "[tl_k] = " << at(c, index[0]) << ";\n";
                  });
  } else {
    line() << "for (i64 k = 0; k < " << m * n << "; ++k) " << name(res) << "[k] = 0.0f;\n";
  }
  if (at_.dtype == DataType::kFloat64) {  // the interpreter's order: sum in double, add c, round
    open("for (i64 i = 0; i < " + std::to_string(m) + "; ++i) for (i64 j = 0; j < " +
         std::to_string(n) + "; ++j)");
    line() << "double s = 0;\n";
    line() << "for (i64 p = 0; p < " << k << "; ++p) s += " << a << "[i * " << k << " + p] * " << b
           << "[p * " << n << " + j];\n";
    line() << r << "[i * " << n << " + j] = (float)(s + (double)" << r << "[i * " << n
           << " + j]);\n";
    close();
    return;
  }
  line() << "tl_matmul_acc<" << m << ", " << n << ", " << k << bf16 << ">(" << r << ", " << a
         << ", " << b << ", " << lda << ", " << ldb << ");\n";
}

}  // namespace tileops::tl::cpu
