// tileops_opgen: the Python functions and classes (tileops._C.ops).
#include "tools/opgen/signature.h"

#include <sstream>
#include <string>
#include <vector>

namespace tileops::opgen {
namespace {

// The argument whose optional output, when omitted, writes it in place; -1 when none does.
int in_place_output_of(const Signature& s, int param) {
  for (int o : s.outputs) {
    if (s.params[o].decl->in_place_of == param) return o;
  }
  return -1;
}

bool requested(const Param& p) { return ops::is_requested_output(*p.decl); }

// The views converted so far, then undefined Tensors: what the rules of output `upto` read.
std::string py_views_so_far(const Signature& s, std::size_t upto) {
  std::string r = "{";
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    if (s.params[i].tensor_index < 0) continue;
    r += (r.size() > 1 ? ", " : "") +
         (i < upto ? "t_" + s.params[i].name + ".view" : std::string("Tensor()"));
  }
  return r + "}";
}

// Converts every tensor argument, allocating omitted outputs (or, with `from_specs`, taking the
// class form's recorded geometry for them), then lists them in `views`. `derive_given`: an
// output given is still derived first, as the hand-written class forms did (the same first
// error).
void print_py_conversions(std::ostringstream& o, const Signature& s, bool from_specs,
                          const std::string& in, bool derive_given = false) {
  std::string views;
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    const Param& p = s.params[i];
    if (p.tensor_index < 0) continue;
    const std::string t = "t_" + p.name;
    views += (views.empty() ? "" : ", ") + t + ".view";
    const std::string convert = "to_tensor(" + p.name + ", kOp, \"" + p.name + "\"";
    const int written_by = in_place_output_of(s, int(i));
    const std::string writable =
        written_by >= 0 ? ", " + s.params[written_by].name + ".is_none())" : ")";
    if (derive_given && p.kind == ArgKind::kOutput) {
      o << in << "{\n"
        << in << "  const Tensor so_far[] = " << py_views_so_far(s, i) << ";\n"
        << in << "  op().output_shape(" << i << ", so_far, attributes);\n"
        << in << "}\n";
    }
    o << in << "PyTensor " << t << " = ";
    switch (p.kind) {
      case ArgKind::kInput:
        o << convert << writable << ";\n";
        break;
      case ArgKind::kOptionalInput:
        o << p.name << ".is_none() ? PyTensor{} : " << convert << writable << ";\n";
        break;
      case ArgKind::kInOut:
        o << convert << ", true);\n";
        break;
      case ArgKind::kOptionalOutput:
        if (!requested(p)) {
          o << p.name << ".is_none() ? PyTensor{} : " << convert << ", true);\n";
        } else if (from_specs) {  // allocated where the class form was built with it
          o << "!" << p.name << ".is_none() ? " << convert << ", true)\n"
            << in << "    : requested_[" << p.tensor_index << "] ? outs_[" << p.tensor_index
            << "].get(" << p.name << ", t_" << s.params[s.first_input].name << ".frontend, kOp, \""
            << p.name << "\")\n"
            << in << "    : PyTensor{};\n";
        } else {
          o << "!" << p.name << ".is_none() ? " << convert << ", true)\n"
            << in << "    : return_" << p.name << " ? allocate_output(op(), " << i << ", "
            << py_views_so_far(s, i) << ", attributes, t_" << s.params[s.first_input].name
            << ".frontend)\n"
            << in << "    : PyTensor{};\n";
        }
        break;
      default: {
        const std::string frontend = "t_" + s.params[s.first_input].name + ".frontend";
        if (from_specs) {
          o << "outs_[" << p.tensor_index << "].get(" << p.name << ", " << frontend << ", kOp, \""
            << p.name << "\");\n";
        } else {
          o << p.name << ".is_none()\n"
            << in << "    ? allocate_output(op(), " << i << ", " << py_views_so_far(s, i)
            << ", attributes, " << frontend << ")\n"
            << in << "    : " << convert << ", true);\n";
        }
      }
    }
  }
  o << in << "const Tensor views[] = {" << views << "};\n";
}

std::string py_attribute(const Param& p) {
  if (!p.decl->in_python) return number(p.decl->default_value);
  if (p.decl->accepts_none) {
    const std::string read =
        p.kind == ArgKind::kFloat ? "float_arg" : "static_cast<double>(int_arg";
    return p.name + ".is_none() ? " + number(p.decl->none_value) + " : " + read + "(" + p.name +
           ", kOp, \"" + p.name + "\")" + (p.kind == ArgKind::kFloat ? "" : ")");
  }
  return p.kind == ArgKind::kFloat ? p.name : "static_cast<double>(" + p.name + ")";
}

void print_py_attributes(std::ostringstream& o, const Signature& s, const std::string& in) {
  if (s.num_attributes == 0) {
    o << in << "const std::span<const double> attributes;\n";
    return;
  }
  o << in << "const double attributes[] = {";
  for (const Param& p : s.params) {
    if (p.attribute_index >= 0) o << (p.attribute_index ? ", " : "") << py_attribute(p);
  }
  o << "};\n";
}

bool has_requested(const Signature& s) {
  for (int i : s.outputs) {
    if (requested(s.params[i])) return true;
  }
  return false;
}

// Python sees None for an operator without outputs (it writes its in-out arguments). With a
// requested output, one object or a tuple, by what was requested.
std::string py_return_type(const Signature& s) {
  if (s.outputs.empty()) return "void";
  return s.outputs.size() > 1 && !has_requested(s) ? "py::tuple" : "py::object";
}

// `in_class`: the class form's __call__, where the constructor decided what is requested.
std::string py_result(const Signature& s, bool in_class) {
  const auto one = [&](int i) {
    const Param& p = s.params[i];
    if (p.kind == ArgKind::kOptionalOutput && !requested(p)) {
      return "given_or(" + p.name + ", " + s.params[p.decl->in_place_of].name + ")";
    }
    return "result_of(" + p.name + ", t_" + p.name + ")";
  };
  if (has_requested(s)) {  // the outputs, a requested one only where it was computed
    std::string r = "results_of({";
    for (std::size_t i = 0; i < s.outputs.size(); ++i) {
      const Param& p = s.params[s.outputs[i]];
      r += std::string(i ? ", " : "") + "{" + one(s.outputs[i]) + ", " +
           (requested(p) ? "!" + p.name + ".is_none() || " +
                               (in_class ? "requested_[" + std::to_string(p.tensor_index) + "]"
                                         : "return_" + p.name)
                         : std::string("true")) +
           "}";
    }
    return r + "})";
  }
  if (s.outputs.size() == 1) return one(s.outputs[0]);
  std::string r = "py::make_tuple(";
  for (std::size_t i = 0; i < s.outputs.size(); ++i) r += (i ? ", " : "") + one(s.outputs[i]);
  return r + ")";
}

// A requested output `x` is followed by `bool return_x` (not in the class form's __call__).
std::string py_params(const Signature& s, bool tensors_only) {
  std::string r;
  for (const Param& p : s.params) {
    if ((tensors_only && p.tensor_index < 0) || !p.decl->in_python) continue;
    r += p.py_type + " " + p.name + ", ";
    if (requested(p) && !tensors_only) r += "bool return_" + p.name + ", ";
  }
  return r;
}

// The py::arg list; keyword-only arguments follow `*`, as do `extra` (the binding's own).
std::string py_args(const Signature& s, bool tensors_only, const std::string& extra) {
  std::string r;
  bool keyword = false;
  for (const Param& p : s.params) {
    if ((tensors_only && p.tensor_index < 0) || !p.decl->in_python) continue;
    if (p.decl->keyword_only && !keyword) r += "py::kw_only(), ", keyword = true;
    r += "py::arg(\"" + p.name + "\")";
    if (!p.py_default.empty()) r += " = " + p.py_default;
    r += ", ";
    if (requested(p) && !tensors_only) r += "py::arg(\"return_" + p.name + "\") = false, ";
  }
  return r + (keyword ? "" : "py::kw_only(), ") + extra;
}

void print_py_op(std::ostringstream& o, const Signature& s) {
  const std::string ret = py_return_type(s);
  o << "namespace " << s.name << "_binding {\n\n"
    << "constexpr std::string_view kOp = \"" << s.name << "\";\n"
    << "const ops::DeclaredOp& op() {\n"
    << "  static const ops::DeclaredOp& declared = ops::declared_op(kOp);\n"
    << "  return declared;\n}\n\n";
  // The free function.
  o << ret << " call(" << py_params(s, false) << "int index, py::handle stream) {\n"
    << "  Context ctx = make_context(kOp, index, stream);\n";
  print_py_attributes(o, s, "  ");
  print_py_conversions(o, s, false, "  ");
  o << "  run_released([&] { op().call(views, attributes, ctx); });\n"
    << (s.outputs.empty() ? "" : "  return " + py_result(s, false) + ";\n") << "}\n\n";
  // The class form: the constructor takes the function's arguments, __call__ the tensors.
  o << "class Prepared {\n public:\n"
    << "  Prepared(" << py_params(s, false) << "int index) {\n";
  print_py_attributes(o, s, "    ");
  print_py_conversions(o, s, false, "    ", true);
  for (int i : s.outputs) {
    const Param& p = s.params[i];
    if (p.kind != ArgKind::kOutput && !requested(p)) continue;
    if (requested(p)) {
      o << "    requested_[" << p.tensor_index << "] = !" << p.name << ".is_none() || return_"
        << p.name << ";\n";
    }
    o << "    outs_[" << p.tensor_index << "] = {t_" << p.name << ".view.shape(), t_" << p.name
      << ".view.dtype()};\n";
  }
  o << "    prepared_ = std::make_shared<const ops::PreparedOperator>(\n"
       "        op().prepare(views, attributes, index));\n  }\n\n"
    << "  " << ret << " operator()(" << py_params(s, true) << "py::handle stream) const {\n"
    << "    Context ctx = make_context(kOp, 0, stream);\n";
  print_py_conversions(o, s, true, "    ");
  o << "    run_released([&] { op().run(*prepared_, views, ctx); });\n"
    << (s.outputs.empty() ? "" : "    return " + py_result(s, true) + ";\n") << "  }\n\n"
    << " private:\n  std::shared_ptr<const ops::PreparedOperator> prepared_;\n"
    << "  OutputSpec outs_[" << s.num_tensors << "];\n"
    << (has_requested(s) ? "  bool requested_[" + std::to_string(s.num_tensors) + "] = {};\n" : "")
    << "};\n\n";
  std::string ctor_types;
  for (const Param& p : s.params) {
    if (p.decl->in_python) ctor_types += p.py_type + ", ";
    if (p.decl->in_python && requested(p)) ctor_types += "bool, ";
  }
  o << "void bind(py::module_& m) {\n"
    << "  m.def(\"" << s.name << "\", &call, \"" << s.decl->summary << "\",\n        "
    << py_args(s, false, "py::arg(\"implementation_index\") = 0, py::arg(\"stream\") = py::none()")
    << ");\n"
    << "  py::class_<Prepared>(m, \"" << s.decl->class_name << "\")\n"
    << "      .def(py::init<" << ctor_types << "int>(),\n           "
    << py_args(s, false, "py::arg(\"implementation_index\") = 0") << ")\n"
    << "      .def(\"__call__\", &Prepared::operator(),\n           "
    << py_args(s, true, "py::arg(\"stream\") = py::none()") << ");\n}\n\n"
    << "}  // namespace " << s.name << "_binding\n\n";
}

}  // namespace

std::string print_python(const std::vector<Signature>& sigs) {
  std::ostringstream o;
  o << "// Generated by tools/opgen from the operator declarations. Do not edit.\n"
       "#include <limits>\n#include <memory>\n#include <span>\n#include <string_view>\n\n"
       "#include \"python/src/declared_bindings.h\"\n\n"
       "namespace tileops::python {\nnamespace {\n\n";
  for (const Signature& s : sigs) print_py_op(o, s);
  o << "}  // namespace\n\nvoid bind_declared_ops(py::module_& m) {\n";
  for (const Signature& s : sigs) o << "  " << s.name << "_binding::bind(m);\n";
  o << "}\n\n}  // namespace tileops::python\n";
  return o.str();
}

}  // namespace tileops::opgen
