// The per-op checker behind infer_result_types (infer.h): operand and attribute checks and
// result types, split over infer.cc (values, memory, dispatch) and infer_tiles.cc (reductions,
// data movement, matmul, control flow).
#pragma once

#include <string>
#include <vector>

#include "src/tl/verify/infer.h"

namespace tileops::tl::detail {

inline std::string type_name(DataType dtype) { return std::string(name_of(dtype)); }

class Checker {
 public:
  Checker(const Function& f, const Op& op) : f_(f), op_(op), name_(construct_name(op)) {}

  [[noreturn]] void fail(const std::string& message,
                         ErrorKind kind = ErrorKind::kInvalidArgument) const {
    trace_error(kind, op_.loc, name_, message);
  }
  const Type& operand(std::size_t i) const {
    if (i >= op_.operands.size())
      fail("missing operand " + std::to_string(i), ErrorKind::kInternal);
    return f_.type_of(op_.operands[i]);
  }
  void need_operands(std::size_t n) const {
    if (op_.operands.size() != n) {
      fail("expected " + std::to_string(n) + " operands, got " +
           std::to_string(op_.operands.size()));
    }
  }
  void need_value(std::size_t i, const char* what) const {
    const Type& t = operand(i);
    if (t.kind != TypeKind::kTile && t.kind != TypeKind::kScalar) {
      fail(std::string(what) + " must be a tile or scalar, got " + t.to_string());
    }
  }
  void need_int_scalar(std::size_t i, const char* what) const {
    const Type& t = operand(i);
    if (t.kind != TypeKind::kScalar || !is_integral(t.dtype)) {
      fail(std::string(what) + " must be an integer scalar, got " + t.to_string(),
           ErrorKind::kInvalidType);
    }
  }
  void need_tile(std::size_t i, const char* what) const {
    if (operand(i).kind != TypeKind::kTile) {
      fail(std::string(what) + " must be a tile, got " + operand(i).to_string());
    }
  }
  void need_float(const Type& t, const char* what) const {
    if (!is_floating(t.dtype)) {
      fail(std::string(what) + " needs a float dtype, got " + type_name(t.dtype),
           ErrorKind::kInvalidType);
    }
  }
  void need_static(const std::vector<std::int64_t>& shape, const char* what) const {
    if (shape.empty()) fail(std::string(what) + " must have at least one dim");
    for (std::int64_t d : shape) {
      if (d <= 0) fail(std::string(what) + " must be positive, got " + shape_string(shape));
    }
  }
  int axis(std::int64_t a, std::size_t rank) const {
    const auto r = static_cast<std::int64_t>(rank);
    if (a < -r || a >= r) {
      fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    }
    return static_cast<int>(a < 0 ? a + r : a);
  }
  // Tensor access (load/store/atomic): tensor, offsets (rank of tensor).
  void access(std::size_t tensor_index, std::size_t first_offset) const {
    const Type& t = operand(tensor_index);
    if (t.kind != TypeKind::kTensor) fail("target must be a global tensor, got " + t.to_string());
    for (std::size_t i = 0; i < t.shape.size(); ++i) need_int_scalar(first_offset + i, "offset");
  }

  // A tile of `shape` and `dtype`: its element count, and its bytes as a backend may hold them
  // (kHeldBytes per element), within int64; throws naming the construct otherwise.
  void check_tile_size(const std::vector<std::int64_t>& shape, DataType dtype) const;

  std::vector<Type> infer() const;

 private:
  std::vector<Type> infer_unchecked() const;
  std::vector<Type> elementwise() const;
  std::vector<Type> memory() const;
  std::vector<Type> reshaping() const;
  std::vector<Type> control() const;
  std::vector<Type> reduce() const;

  const Function& f_;
  const Op& op_;
  std::string name_;
};

Type tile_or_scalar(DataType dtype, std::vector<std::int64_t> shape);

// The bytes a backend holds per tile element at most: the interpreter keeps every element as a
// double or an int64, the cpu backend computes in types of up to 8 bytes.
inline constexpr std::size_t kHeldBytes = 8;

}  // namespace tileops::tl::detail
