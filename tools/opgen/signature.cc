#include "tools/opgen/signature.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tileops::opgen {

std::string number(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";  // ops::kFromCheck
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

Signature plan(const OpDecl& decl) {
  Signature sig{&decl, std::string(decl.name), {}, 0, 0, {}, -1};
  for (const ArgDecl& a : decl.arguments()) {
    Param p{std::string(a.name), a.kind, &a, -1, -1, "", "", ""};
    switch (a.kind) {
      case ArgKind::kInput:
      case ArgKind::kOptionalInput:
      case ArgKind::kInOut:
      case ArgKind::kOutput:
      case ArgKind::kOptionalOutput:
        p.tensor_index = sig.num_tensors++;
        p.c_type = "const tileops_tensor*";
        p.py_type = "py::handle";
        if (a.kind == ArgKind::kOptionalInput || a.kind == ArgKind::kOutput ||
            a.kind == ArgKind::kOptionalOutput) {
          p.py_default = "py::none()";
        }
        if (a.kind == ArgKind::kOutput || a.kind == ArgKind::kOptionalOutput) {
          sig.outputs.push_back(int(sig.params.size()));
        }
        if (a.kind == ArgKind::kInput && sig.first_input < 0)
          sig.first_input = int(sig.params.size());
        break;
      case ArgKind::kFloat:
        p.c_type = "double", p.py_type = "double";
        if (a.has_default) p.py_default = number(a.default_value);
        break;
      case ArgKind::kInt:
        p.c_type = "int32_t", p.py_type = "int";
        if (a.has_default) p.py_default = std::to_string(static_cast<long long>(a.default_value));
        break;
      case ArgKind::kInt64:
        p.c_type = "int64_t", p.py_type = "std::int64_t";
        if (a.has_default) p.py_default = std::to_string(static_cast<long long>(a.default_value));
        break;
      case ArgKind::kBool:
        p.c_type = "int32_t", p.py_type = "bool";
        if (a.has_default) p.py_default = a.default_value != 0.0 ? "true" : "false";
        break;
    }
    if (!ops::is_tensor(a.kind)) p.attribute_index = sig.num_attributes++;
    if (a.accepts_none) p.py_type = "py::handle", p.py_default = "py::none()";
    sig.params.push_back(p);
  }
  // An optional tensor before a required argument is required in Python too (None allowed).
  bool required_after = false;
  for (auto p = sig.params.rbegin(); p != sig.params.rend(); ++p) {
    if (p->decl->keyword_only) continue;
    if (p->kind == ArgKind::kOptionalInput && required_after) p->py_default.clear();
    required_after = required_after || p->py_default.empty();
  }
  return sig;
}

}  // namespace tileops::opgen
