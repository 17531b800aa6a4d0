// The cpu code generator's printer: control flow and tensors (compute ops are in
// codegen_compute.cc, memory in codegen_memory.cc); the plan (plan.h) is made first. Generated
// loops have static trip counts wherever the IR has static shapes, so -O3 vectorises them; loads
// and stores clip every row to the tensor's bounds.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "src/tl/cpu/emitter.h"
#include "src/tl/cpu/runtime_source.h"
#include "src/tl/interp/buffer.h"
#include "src/tl/verify/infer.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/knobs.h"

namespace tileops::tl::cpu {
namespace {

bool is_16_or_8_bit_float(DataType d) { return is_floating(d) && size_of(d) < 4; }

std::string float_literal(double v, DataType dtype) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return dtype == DataType::kFloat64 ? std::string(buf) : "(float)" + std::string(buf);
}

}  // namespace

void Emitter::declare_named(const std::string& n, const Type& t, bool bits) {
  if (t.kind == TypeKind::kTile) {
    line() << "alignas(64) " << (bits ? memory_type(t.dtype) : compute_type(t.dtype)) << " " << n
           << "[" << t.size() << "];\n";
    on_stack(t.size() *
             (bits ? static_cast<std::int64_t>(size_of(t.dtype)) : compute_bytes(t.dtype)));
  } else {
    line() << compute_type(t.dtype) << " " << n << ";\n";
  }
}

// Tiles live on the stack of the thread running the block: a pool worker's or the caller's,
// 8 MiB by default on Linux (RLIMIT_STACK); half of it is left to the kernel's callers. Arrays in
// scopes that never overlap are counted as if they did. (The runtime's bfloat16 matmul packs its
// operands into at most 256 KiB more of the callers' half: tl_matmul_acc.)
constexpr std::int64_t kStackBudget = std::int64_t{4} << 20;

void Emitter::on_stack(std::int64_t bytes) {
  // Saturating: each tile's bytes fit int64 (the verifier checks), their sum need not.
  if (__builtin_add_overflow(stack_bytes_, bytes, &stack_bytes_))
    stack_bytes_ = std::numeric_limits<std::int64_t>::max();
  if (bytes > largest_bytes_) largest_bytes_ = bytes, largest_op_ = emitting_;
}

void Emitter::check_stack() const {
  if (stack_bytes_ <= kStackBudget || largest_op_ == nullptr) return;
  const auto mib = [](std::int64_t b) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(b) / (1 << 20));
    return std::string(text);
  };
  const Op& op = *largest_op_;
  const std::string tile =
      op.results.empty() ? std::string("its tile") : type(op.results[0]).to_string();
  trace_error(ErrorKind::kInvalidArgument, op.loc, construct_name(op),
              "the cpu backend keeps a kernel's tiles on the stack: this kernel's take " +
                  mib(stack_bytes_) + ", " + mib(largest_bytes_) + " of them for this " + tile +
                  ", and at most " + mib(kStackBudget) +
                  " fit; use smaller tiles (loop over parts of this one)");
}

void Emitter::fill(const std::string& dst, const Type& t, const std::string& value) {
  line() << "for (i64 k = 0; k < " << t.size() << "; ++k) " << dst << "[k] = ("
         << compute_type(t.dtype) << ")" << value << ";\n";
}

void Emitter::copy_named(const std::string& dst, const std::string& src, const Type& t) {
  if (t.kind == TypeKind::kTile) {  // the same storage when an op worked in place
    // A loop, not memmove: no library call (compiler.cc), and the two never overlap partly.
    line() << "if (" << dst << " != " << src << ") for (i64 k = 0; k < " << t.size() << "; ++k) "
           << dst << "[k] = " << src << "[k];\n";
  } else {
    line() << dst << " = " << src << ";\n";
  }
}

GeneratedSource Emitter::run() {
  out_ << "#define TL_STREAM_BYTES " << cpu_streaming_store_bytes() << "ll\n" << runtime_source();
  out_ << "extern \"C\" int tl_kernel(i64 tl_block, i64 tl_num_blocks, const TlArg* tl_args, "
          "const TlRt* rt) {\n";
  line() << "(void)tl_block; (void)tl_num_blocks; (void)tl_args; (void)rt;\n";
  hoist_at_ = out_.str().size();
  for (std::size_t i = 0; i < f_.params.size(); ++i) {
    const Param& p = f_.params[i];
    const std::string arg = "tl_args[" + std::to_string(i) + "]";
    switch (p.kind) {
      case ParamKind::kGlobalAddress:
        line() << "void* const " << name(p.value) << " = " << arg << ".p;\n";
        break;
      case ParamKind::kInt:
        line() << "const i64 " << name(p.value) << " = " << arg << ".i;\n";
        break;
      case ParamKind::kFloat:
        line() << "const float " << name(p.value) << " = (float)" << arg << ".f;\n";
        break;
      case ParamKind::kBool:
        line() << "const u8 " << name(p.value) << " = " << arg << ".i != 0;\n";
        break;
    }
  }
  region(f_.body);
  check_stack();
  line() << "tl_fence();\n";
  line() << "return 0;\n";
  out_ << "}\n";
  std::string text = out_.str(), hoisted;
  for (const std::string& h : hoisted_) hoisted += indent_ + h + "\n";
  text.insert(hoist_at_, hoisted);
  return GeneratedSource{std::move(text), checks_};
}

void Emitter::region(const Region& r) {
  // The cursors and tensors of this region go out of scope with it.
  const std::size_t cursors = prefetch_.size(), hints = hints_.size(), tensors = tensors_.size();
  for (const Op& o : r.ops) op(o);
  prefetch_.resize(cursors);
  hints_.resize(hints);
  hint_bytes_.resize(hints);
  hint_ops_.resize(hints);
  tensors_.resize(tensors);
}

void Emitter::op(const Op& o) {
  struct Emitting {  // emitting_ = &o for the duration of this call
    const Op*& at;
    const Op* outer;
    ~Emitting() { at = outer; }
  } const emitting{emitting_, emitting_};
  emitting_ = &o;
  const int res = o.results.empty() ? -1 : o.results[0];
  switch (o.kind) {
    case OpKind::kConstant: {
      const DataType d = type(res).dtype;
      std::string v;
      if (is_floating(d)) {
        v = float_literal(interp::round_to(d, o.as<ConstantAttrs>().number.value), d);
      } else {
        v = wrap_int(d, std::to_string(interp::wrap_to(d, o.as<ConstantAttrs>().integer)) + "ll");
      }
      line() << "const " << compute_type(d) << " " << name(res) << " = " << v << ";\n";
      return;
    }
    case OpKind::kBlockIdx:
      line() << "const i64 " << name(res) << " = tl_block;\n";
      return;
    case OpKind::kBlockNum:
      line() << "const i64 " << name(res) << " = tl_num_blocks;\n";
      return;
    case OpKind::kTensor:
      tensor_op(o);
      return;
    case OpKind::kTensorDim: {
      const auto rank = static_cast<std::int64_t>(type(o.operands[0]).shape.size());
      const std::int64_t given = o.as<AxisAttrs>().axis;
      const std::int64_t axis = given < 0 ? given + rank : given;
      line() << "const i64 " << name(res) << " = " << name(o.operands[0]) << "_d" << axis << ";\n";
      return;
    }
    case OpKind::kLoad:
      load_op(o);
      return;
    case OpKind::kStore:
    case OpKind::kAtomic:
      store_op(o);
      return;
    case OpKind::kPrefetch:
      prefetch_op(o);
      return;
    case OpKind::kFull:
      if (plan(res).fills_loop) return;  // for_op fills the loop's buffer instead
      declare(res);
      fill(name(res), type(res), name(o.operands[0]));
      return;
    case OpKind::kArange: {
      declare(res);
      const Type& t = type(res);
      const std::string v =
          is_16_or_8_bit_float(t.dtype)
              ? round_double(t.dtype, "(double)k")
              : (is_floating(t.dtype) ? std::string("k") : wrap_int(t.dtype, "k"));
      line() << "for (i64 k = 0; k < " << t.size() << "; ++k) " << name(res) << "[k] = ("
             << compute_type(t.dtype) << ")" << v << ";\n";
      return;
    }
    case OpKind::kUnary:
    case OpKind::kBinary:
    case OpKind::kWhere:
      elementwise_op(o);
      return;
    case OpKind::kCast:
      cast_op(o);
      return;
    case OpKind::kReduce:
      reduce_op(o);
      return;
    case OpKind::kCumsum:
      cumsum_op(o);
      return;
    case OpKind::kSort:
      sort_op(o);
      return;
    case OpKind::kReshape:
    case OpKind::kBroadcast:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcat:
      move_op(o);
      return;
    case OpKind::kMatmul:
      matmul_op(o);
      return;
    case OpKind::kFor:
      for_op(o);
      return;
    case OpKind::kIf:
      if_op(o);
      return;
  }
}

void Emitter::for_op(const Op& o) {
  const Region& body = o.regions[0];
  const std::size_t carried = body.args.size() - 1;
  for (std::size_t c = 0; c < carried; ++c) {
    declare(body.args[c + 1]);
    const int init = o.operands[3 + c];
    if (plan(init).fills_loop) {
      fill(name(body.args[c + 1]), type(init), name(plan(init).def->operands[0]));
    } else {
      copy_value(body.args[c + 1], init);
    }
  }
  const std::string start = name(o.operands[0]), stop = name(o.operands[1]),
                    step = name(o.operands[2]);
  const std::string iv = name(body.args[0]);
  // A counted loop: the trip count is computed first, so a counter near the int64 limits never
  // steps past them (iv += step wrapped around and the loop never ended).
  const std::string k = iv + "_k", n = iv + "_n";
  // A constant 0 fails at trace time; one known only at run time fails here, as Python's range.
  line() << "if (" << step << " == 0) return "
         << error_site(o, "range", "step must not be 0 (it is at run time)") << ";\n";
  const std::int64_t unroll = o.as<ForAttrs>().unroll;
  if (unroll > 1) line() << "#pragma GCC unroll " << unroll << "\n";
  open(cat({"for (u64 ", k, " = 0, ", n, " = tl_trip_count(", start, ", ", stop, ", ", step, "); ",
            k, " < ", n, "; ++", k, ")"}));
  line() << "const i64 " << iv << " = (i64)((u64)" << start << " + " << k << " * (u64)" << step
         << ");\n";
  region(body);
  if (carried == 1) {
    copy_value(body.args[1], body.yields[0]);
  } else if (carried > 1) {  // through temporaries: a yield may be another carried value
    std::vector<std::string> temps;
    for (std::size_t c = 0; c < carried; ++c) {
      temps.push_back(fresh("tl_next"));
      declare_named(temps.back(), type(body.args[c + 1]));
      copy_named(temps.back(), name(body.yields[c]), type(body.args[c + 1]));
    }
    for (std::size_t c = 0; c < carried; ++c) {
      copy_named(name(body.args[c + 1]), temps[c], type(body.args[c + 1]));
    }
  }
  close();
  for (std::size_t c = 0; c < carried; ++c) {
    line() << "auto& " << name(o.results[c]) << " = " << name(body.args[c + 1]) << ";\n";
  }
}

namespace {

// Marks the values defined inside `r` (its arguments and the results of its ops, nested ones too).
void mark_defined(const Region& r, std::vector<bool>& inside) {
  for (int a : r.args) inside[static_cast<std::size_t>(a)] = true;
  for (const Op& o : r.ops) {
    for (int id : o.results) inside[static_cast<std::size_t>(id)] = true;
    for (const Region& inner : o.regions) mark_defined(inner, inside);
  }
}

}  // namespace

// A tile result that a branch yields unchanged from before the if (a tile the if masks only in
// one branch) points at that tile in the branch instead of copying it: the result is a pointer to
// its own array, which the other branches fill. Only values an op defines (not loop-carried
// storage, which the loop's own yield overwrites) held in their compute type, so every read of
// the result reads the same elements; a load read in place keeps its tensor free of stores while
// the if's results live (plan_loads.cc counts yields as uses).
void Emitter::if_op(const Op& o) {
  std::vector<bool> inside(f_.types.size(), false);
  for (const Region& r : o.regions) mark_defined(r, inside);
  const auto aliases = [&](std::size_t i, std::size_t branch) {
    const int y = o.regions[branch].yields[i];
    const ValuePlan& p = plan(y);
    return type(o.results[i]).kind == TypeKind::kTile && !inside[static_cast<std::size_t>(y)] &&
           p.def != nullptr && !p.widened && !p.fused;
  };
  std::vector<bool> pointer(o.results.size(), false);
  for (std::size_t i = 0; i < o.results.size(); ++i) {
    const int res = o.results[i];
    pointer[i] = aliases(i, 0) || aliases(i, 1);
    if (!pointer[i]) {
      declare(res);
      continue;
    }
    declare_named(name(res) + "_buf", type(res));
    line() << compute_type(type(res).dtype) << "* " << name(res) << " = " << name(res) << "_buf;\n";
  }
  for (std::size_t branch = 0; branch < 2; ++branch) {
    open(branch == 0 ? "if (" + name(o.operands[0]) + ")" : "else");
    const Region& r = o.regions[branch];
    region(r);
    for (std::size_t i = 0; i < o.results.size(); ++i) {
      if (pointer[i] && aliases(i, branch)) {
        line() << name(o.results[i]) << " = " << name(r.yields[i]) << ";\n";
      } else {
        copy_value(o.results[i], r.yields[i]);
      }
    }
    close();
  }
}

void Emitter::tensor_op(const Op& o) {
  const std::string t = name(o.results[0]);
  const DataType d = type(o.results[0]).dtype;
  const TensorAttrs& attrs = o.as<TensorAttrs>();
  const auto rank = static_cast<std::size_t>(attrs.rank);
  line() << memory_type(d) << "* const " << t << " = (" << memory_type(d) << "*)"
         << name(o.operands[0]) << ";\n";
  const int site = error_site(o, "tensor", "negative extent");
  for (std::size_t i = 0; i < rank; ++i) {
    line() << "const i64 " << t << "_d" << i << " = " << name(o.operands[1 + i]) << ";\n";
    line() << "if (" << t << "_d" << i << " < 0) return " << site << ";\n";
  }
  for (std::size_t i = 0; i < rank; ++i) {
    line() << "const i64 " << t << "_s" << i << " = ";
    if (attrs.has_strides) {
      out_ << name(o.operands[1 + rank + i]) << ";\n";
    } else {
      // Wrapping: an overflowing product fails tl_geometry_ok below.
      std::string s = "(i64)(1ull";
      for (std::size_t j = i + 1; j < rank; ++j) s += " * (u64)" + t + "_d" + std::to_string(j);
      out_ << s << ");\n";
    }
  }
  // Sizes and addresses below are then exact (row-major strides are checked as the product).
  std::string dims, strides;
  for (std::size_t i = 0; i < rank; ++i) {
    dims += cat({i ? ", " : "", t, "_d", std::to_string(i)});
    strides += cat({i ? ", " : "", t, "_s", std::to_string(i)});
  }
  line() << "{ const i64 tl_gd[] = {" << dims << "}, tl_gs[] = {" << strides
         << "}; if (!tl_geometry_ok(" << size_of(d) << ", " << rank << ", tl_gd, tl_gs)) return "
         << error_site(o, "tensor", interp::kTensorGeometryMessage) << "; }\n";
  std::string bytes = std::to_string(size_of(d));
  for (std::size_t i = 0; i < rank; ++i) bytes += " * " + t + "_d" + std::to_string(i);
  // The bytes the tensor may touch, [_lo, _hi) (for the overlap test of in-place loads).
  std::string lo = "0", hi = "1";
  for (std::size_t i = 0; i < rank; ++i) {
    const std::string span = cat({"(i64)((u64)(", t, "_d", std::to_string(i), " - 1) * (u64)", t,
                                  "_s", std::to_string(i), ")"});
    lo += cat({" + (", span, " < 0 ? ", span, " : 0)"});
    hi += cat({" + (", span, " > 0 ? ", span, " : 0)"});
  }
  line() << "const i64 " << t << "_bytes = " << bytes << ";\n";
  line() << "(void)" << t << "_bytes;\n";
  line() << "const char* const " << t << "_lo = (const char*)(" << t << " + (" << lo << "));\n";
  line() << "const char* const " << t << "_hi = (const char*)(" << t << " + (" << hi << "));\n";
  line() << "(void)" << t << "_lo; (void)" << t << "_hi;\n";
  tensors_.push_back(t);
}

GeneratedSource generate(const Function& function) { return Emitter(function).run(); }

}  // namespace tileops::tl::cpu
