// Problem: one validated operator call without its data — operator name, the geometry of every
// tensor argument and the scalar attributes. It is what implementations are specialised on and
// what the operator cache is keyed on.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tileops/core/tensor.h"

namespace tileops::ops {

struct TensorDesc {
  bool present = false;  // false for an omitted optional argument
  DataType dtype = DataType::kFloat32;
  Device device;
  Dims shape;
  Dims strides;

  static TensorDesc of(const Tensor& tensor);
  static TensorDesc absent() { return {}; }
  // True when `tensor` has exactly this geometry (data pointers are not compared).
  bool matches(const Tensor& tensor) const;
  std::string describe() const;
  friend bool operator==(const TensorDesc&, const TensorDesc&) = default;
};

struct Problem {
  std::string_view op;  // a string literal: the operator's name
  std::vector<TensorDesc> tensors;
  std::vector<double> attributes;

  Device device() const;  // of the first present tensor
  std::size_t hash() const;
  friend bool operator==(const Problem&, const Problem&) = default;
};

}  // namespace tileops::ops
