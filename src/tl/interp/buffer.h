// Run-time values of the interpreter. A tile or scalar is a Buffer holding its elements
// row-major, already rounded to its dtype: floats as double (exact for every float dtype),
// integers and bools as int64 (exact for int64). A global tensor is a TensorView.
#pragma once

#include <cstdint>
#include <vector>

#include "tileops/core/data_type.h"
#include "tileops/tl/ir.h"

namespace tileops::tl::interp {

struct Buffer {
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;  // empty for scalars
  std::vector<double> f;            // float dtypes
  std::vector<std::int64_t> i;      // integer and bool dtypes

  bool floating() const { return is_floating(dtype); }
  std::size_t size() const { return floating() ? f.size() : i.size(); }
  double get(std::size_t k) const { return floating() ? f[k] : static_cast<double>(i[k]); }
  std::int64_t get_int(std::size_t k) const;
  // Stores `v` rounded (floats: to nearest even) or wrapped (integers) to the dtype.
  void set(std::size_t k, double v);
  void set_int(std::size_t k, std::int64_t v);
  void resize(DataType d, std::vector<std::int64_t> s);
};

struct TensorView {
  char* base = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements
};

struct Slot {
  Buffer buffer;
  TensorView tensor;
  void* pointer = nullptr;
};

// Rounds to the nearest value of a float dtype (ties to even; saturating where the format does).
double round_to(DataType dtype, double v);
// Wraps an integer to an integer dtype (two's complement), or to 0/1 for bool.
std::int64_t wrap_to(DataType dtype, std::int64_t v);
// Converts one element with a rounding mode (see docs/tile-language.md, casts).
void cast_element(const Buffer& from, std::size_t k, Buffer& to, std::size_t j, RoundMode mode);

// Reads element k of `from` as its dtype's bits and stores them as element j of `to`, a dtype of
// the same size (bitcast_compatible). Signalling NaNs come out quiet (floats are held as double).
void bitcast_element(const Buffer& from, std::size_t k, Buffer& to, std::size_t j);

// A tl::tensor whose byte count, or the bytes its strides reach, exceed int64 is refused at
// launch, so that every element address is computed exactly (both backends give this message).
inline constexpr const char* kTensorGeometryMessage =
    "extents and strides reach beyond int64 bytes";
// Whether `t` passes that check (an empty tensor always does).
bool tensor_geometry_ok(const TensorView& t);

// Row-major strides of a static shape.
std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape);

}  // namespace tileops::tl::interp
