// What tileops reads from a torch.Tensor. The optional module tileops._torch_view, built
// against torch's C++ headers, reads it in C++; without it tileops calls five Python methods
// per tensor, which dominates the cost of a tiny operator call.
#pragma once

#include <Python.h>

#include <cstdint>

#include "tileops/core/data_type.h"
#include "tileops/core/dims.h"

namespace tileops::python {

struct TorchFacts {
  void* data = nullptr;
  int rank = 0;
  bool is_cpu = false;
  bool is_neg = false;   // reads negate memory (x.conj().imag, torch._neg_view)
  bool is_conj = false;  // reads conjugate memory
  DataType dtype = DataType::kFloat32;
  std::int64_t sizes[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
};

// Fills `facts` for a torch.Tensor (or subclass) and returns true; returns false for what the
// Python path must handle (and report): non-strided layouts, no storage, rank above kMaxRank,
// dtypes tileops lacks.
using TorchFactsReader = bool (*)(PyObject* tensor, TorchFacts* facts);

// The PyCapsule attribute `reader` of tileops._torch_view holds a TorchFactsReader.
inline constexpr const char* kTorchFactsCapsule = "tileops._torch_view.reader";

}  // namespace tileops::python
