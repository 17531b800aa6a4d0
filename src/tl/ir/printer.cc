// The stable text form of the IR. One op per line, nested regions indented by two spaces:
//   %5 = load %3[%4], pad %2 {shape=[128]} : tile<128xf32>
// Nothing in it depends on pointers or hash-map order, so equal kernels print equally.
#include <map>
#include <sstream>

#include "tileops/tl/ir.h"

namespace tileops::tl {
namespace {

std::string short_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "f32";
    case DataType::kFloat16:
      return "f16";
    case DataType::kBFloat16:
      return "bf16";
    case DataType::kFloat64:
      return "f64";
    case DataType::kInt8:
      return "i8";
    case DataType::kInt16:
      return "i16";
    case DataType::kInt32:
      return "i32";
    case DataType::kInt64:
      return "i64";
    case DataType::kUInt8:
      return "u8";
    case DataType::kBool:
      return "i1";
    default:
      return std::string(name_of(dtype));
  }
}

std::string list(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(values[i]);
  }
  return out + "]";
}

class Printer {
 public:
  Printer(const Function& f, bool locations) : f_(f), locations_(locations) {}

  std::string run() {
    out_ << "kernel @" << f_.name << "(";
    for (std::size_t i = 0; i < f_.params.size(); ++i) {
      const Param& p = f_.params[i];
      out_ << (i ? ", " : "") << values({p.value}) << ": " << f_.type_of(p.value).to_string();
    }
    out_ << ") {\n";
    region(f_.body, 1);
    out_ << "}\n";
    return out_.str();
  }

 private:
  void region(const Region& r, int depth) {
    for (const Op& op : r.ops) this->op(op, depth);
    if (!r.yields.empty()) out_ << indent(depth) << "yield " << values(r.yields) << "\n";
  }

  // Values are renumbered in order of first appearance, so the text does not depend on how many
  // values tracing made and passes removed.
  std::string values(const std::vector<int>& ids) {
    std::string out;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto [it, inserted] = numbers_.emplace(ids[i], static_cast<int>(numbers_.size()));
      out += (i ? ", %" : "%") + std::to_string(it->second);
    }
    return out;
  }

  static std::string indent(int depth) { return std::string(2 * depth, ' '); }

  void attrs(const Op& op) {
    std::vector<std::string> a;
    switch (op.kind) {
      case OpKind::kConstant: {
        std::ostringstream v;
        v.precision(17);
        const ConstantAttrs& c = op.as<ConstantAttrs>();
        if (is_floating(c.dtype)) {
          v << c.number.value;
        } else {
          v << c.integer;
        }
        out_ << " " << v.str();  // `%2 = const 0.5 : f32`
        break;
      }
      case OpKind::kCast: {
        const CastAttrs& c = op.as<CastAttrs>();
        a.push_back(c.bitcast ? std::string("bitcast") : std::string("round=") + name_of(c.round));
        break;
      }
      case OpKind::kReduce: {
        const ReduceAttrs& r = op.as<ReduceAttrs>();
        a.push_back("dims=" + list(r.dims));
        if (r.keep_dims) a.emplace_back("keep_dims");
        break;
      }
      case OpKind::kSort: {
        const SortAttrs& t = op.as<SortAttrs>();
        a.push_back("axis=" + list({t.axis}));
        a.push_back("k=" + std::to_string(t.k));
        if (t.descending) a.emplace_back("descending");
        if (t.indices) a.emplace_back("indices");
        break;
      }
      case OpKind::kCumsum:
      case OpKind::kConcat:
      case OpKind::kTensorDim:
        a.push_back("axis=" + list({op.as<AxisAttrs>().axis}));
        break;
      case OpKind::kTranspose:
        a.push_back("perm=" + list(op.as<TransposeAttrs>().permutation));
        break;
      case OpKind::kSlice:
        a.push_back("offsets=" + list(op.as<SliceAttrs>().offsets));
        break;
      case OpKind::kFor: {
        const ForAttrs& f = op.as<ForAttrs>();
        a.push_back("unroll=" + std::to_string(f.unroll));
        if (f.parallel) a.emplace_back("parallel");
        break;
      }
      case OpKind::kStore:
        if (op.as<StoreAttrs>().masked) a.emplace_back("masked");
        break;
      case OpKind::kAtomic:
        if (op.as<AtomicAttrs>().masked) a.emplace_back("masked");
        break;
      case OpKind::kPrefetch:
        a.push_back("shape=" + list(op.as<ShapeAttrs>().shape));
        break;
      case OpKind::kLoad:
        if (const TileLocation at = op.as<LoadAttrs>().location; at != TileLocation::kAny) {
          a.push_back(std::string("location=") + name_of(at));
        }
        break;
      case OpKind::kMatmul:
        if (op.as<MatmulAttrs>().accumulate) a.emplace_back("acc");
        break;
      default:
        break;
    }
    if (a.empty()) return;
    out_ << " {";
    for (std::size_t i = 0; i < a.size(); ++i) out_ << (i ? ", " : "") << a[i];
    out_ << "}";
  }

  void op(const Op& op, int depth) {
    out_ << indent(depth);
    if (!op.results.empty()) out_ << values(op.results) << " = ";
    out_ << name_of(op);
    if (!op.operands.empty()) out_ << " " << values(op.operands);
    attrs(op);
    if (!op.results.empty()) {
      out_ << " :";
      for (std::size_t i = 0; i < op.results.size(); ++i) {
        out_ << (i ? ", " : " ") << f_.type_of(op.results[i]).to_string();
      }
    }
    const std::string loc =
        locations_ && op.loc.line != 0 ? "  // " + op.loc.to_string() : std::string();
    if (op.regions.empty()) {
      out_ << loc << "\n";
      return;
    }
    out_ << " {" << loc << "\n";
    for (std::size_t r = 0; r < op.regions.size(); ++r) {
      const Region& region = op.regions[r];
      out_ << indent(depth) << (op.kind == OpKind::kIf ? (r == 0 ? "then" : "else") : "body");
      if (!region.args.empty()) out_ << "(" << values(region.args) << ")";
      out_ << ":\n";
      this->region(region, depth + 1);
    }
    out_ << indent(depth) << "}\n";
  }

  const Function& f_;
  bool locations_;
  std::ostringstream out_;
  std::map<int, int> numbers_;
};

}  // namespace

std::string SourceLoc::to_string() const {
  const std::size_t slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(line);
}

std::int64_t Type::size() const {
  std::int64_t n = 1;
  if (kind == TypeKind::kTile) {
    for (std::int64_t d : shape) n *= d;
  }
  return n;
}

std::string Type::to_string() const {
  switch (kind) {
    case TypeKind::kScalar:
      return short_name(dtype);
    case TypeKind::kPointer:
      return "ptr<" + short_name(dtype) + ">";
    case TypeKind::kTensor:
      return "tensor<" + std::to_string(shape.size()) + "x" + short_name(dtype) + ">";
    case TypeKind::kTile: {
      std::string s = "tile<";
      for (std::int64_t d : shape) s += std::to_string(d) + "x";
      return s + short_name(dtype) + ">";
    }
  }
  return "?";
}

std::string print(const Function& function, bool locations) {
  return Printer(function, locations).run();
}

std::uint64_t hash_ir(const Function& function) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : print(function, false)) {
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

}  // namespace tileops::tl
