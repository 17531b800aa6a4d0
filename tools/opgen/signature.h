// tileops_opgen's plan: each declaration as the C and Python layers see it (`Signature`),
// decided once; the printers (print_*.cc) only format it.
#pragma once

#include <string>
#include <vector>

#include "tileops/ops/declaration.h"

namespace tileops::opgen {

using ops::ArgDecl;
using ops::ArgKind;
using ops::OpDecl;

// One argument as the C and Python layers see it.
struct Param {
  std::string name;
  ArgKind kind;
  const ArgDecl* decl;
  int tensor_index = -1;     // into the tensor list; -1 for attributes
  int attribute_index = -1;  // into the attribute list
  std::string c_type;
  std::string py_type;
  std::string py_default;  // "" = required
};

struct Signature {
  const OpDecl* decl;
  std::string name;
  std::vector<Param> params;
  int num_tensors = 0;
  int num_attributes = 0;
  std::vector<int> outputs;  // param indices
  int first_input = -1;      // whose kind (torch/numpy) an omitted output takes
};

// The shortest C++ text that reads back as v.
std::string number(double v);
Signature plan(const OpDecl& decl);

// The generated files, each from the signatures of the operators it covers.
std::string print_table(const std::vector<Signature>& sigs);     // declared_ops_table.cc
std::string print_c_header(const std::vector<Signature>& sigs);  // tileops/c/tileops_ops.h
std::string print_c_source(const std::vector<Signature>& sigs);  // c_api_ops.cc
std::string print_cpp(const std::vector<Signature>& sigs);       // cpp_ops.cc
std::string print_python(const std::vector<Signature>& sigs);    // python_ops.cc
std::string print_docs(const std::vector<Signature>& sigs);      // docs/operators.md

}  // namespace tileops::opgen
