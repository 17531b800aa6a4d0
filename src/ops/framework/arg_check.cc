#include "src/ops/framework/arg_check.h"

#include <cstdint>
#include <string>
#include <utility>

namespace tileops::ops {
namespace {

// Whether the bytes two views can touch intersect; empty views touch nothing. Strides are
// non-negative (Tensor's invariant), so a view spans [data, data + extent].
bool byte_ranges_intersect(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto range = [](const Tensor& t) {
    std::int64_t last = 0;
    for (int i = 0; i < t.rank(); ++i) last += (t.shape()[i] - 1) * t.strides()[i];
    const auto* begin = static_cast<const char*>(t.data());
    return std::pair{begin, begin + (last + 1) * static_cast<std::int64_t>(t.element_size())};
  };
  const auto [a_begin, a_end] = range(a);
  const auto [b_begin, b_end] = range(b);
  return a_begin < b_end && b_begin < a_end;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.element_size() == b.element_size() && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

}  // namespace

void ArgCheck::fail(ErrorKind kind, std::string_view arg, std::string_view expected,
                    std::string_view actual) const {
  throw_argument_error(kind, op_, arg, expected, actual);
}

void ArgCheck::usable(const Tensor& t, std::string_view arg) const {
  if (t.data() == nullptr && t.numel() != 0) {
    fail(ErrorKind::kInvalidArgument, arg, "a tensor with data", "a null data pointer");
  }
  if (t.device().type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported, std::string(op_) + ": argument '" + std::string(arg) +
                                             "': device " + t.device().to_string() +
                                             " is not supported by this build (cpu only)");
  }
}

void ArgCheck::dtype_is(const Tensor& t, std::string_view arg, DataType expected,
                        std::string_view why) const {
  if (t.dtype() == expected) return;
  std::string e = "dtype " + std::string(name_of(expected));
  if (!why.empty()) e += " (" + std::string(why) + ")";
  fail(ErrorKind::kInvalidType, arg, e, name_of(t.dtype()));
}

void ArgCheck::dtype_in(const Tensor& t, std::string_view arg,
                        std::initializer_list<DataType> allowed) const {
  std::string e = "dtype in {";
  bool first = true;
  for (DataType d : allowed) {
    if (d == t.dtype()) return;
    e += (first ? "" : ", ") + std::string(name_of(d));
    first = false;
  }
  fail(ErrorKind::kInvalidType, arg, e + "}", name_of(t.dtype()));
}

void ArgCheck::standard_float(const Tensor& t, std::string_view arg) const {
  dtype_in(t, arg, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16});
}

void ArgCheck::rank_is(const Tensor& t, std::string_view arg, int rank) const {
  if (t.rank() != rank) {
    fail(ErrorKind::kInvalidArgument, arg, "rank " + std::to_string(rank),
         "rank " + std::to_string(t.rank()) + " " + t.describe());
  }
}

void ArgCheck::rank_at_least(const Tensor& t, std::string_view arg, int rank) const {
  if (t.rank() < rank) {
    fail(ErrorKind::kInvalidArgument, arg, "rank >= " + std::to_string(rank),
         "rank " + std::to_string(t.rank()) + " " + t.describe());
  }
}

void ArgCheck::shape_is(const Tensor& t, std::string_view arg, const Dims& expected,
                        std::string_view why) const {
  if (t.shape() == expected) return;
  std::string e = "shape " + expected.to_string();
  if (!why.empty()) e += " (" + std::string(why) + ")";
  fail(ErrorKind::kInvalidArgument, arg, e, t.shape().to_string());
}

void ArgCheck::same_device(const Tensor& t, std::string_view arg, const Tensor& reference,
                           std::string_view reference_arg) const {
  if (t.device() == reference.device()) return;
  fail(ErrorKind::kInvalidArgument, arg,
       "device " + reference.device().to_string() + " (as '" + std::string(reference_arg) + "')",
       t.device().to_string());
}

void ArgCheck::writable(const Tensor& t, std::string_view arg) const {
  for (int i = 0; i < t.rank(); ++i) {
    if (t.shape()[i] > 1 && t.strides()[i] == 0) {
      fail(ErrorKind::kInvalidArgument, arg, "an output without zero (broadcast) strides",
           t.describe());
    }
  }
}

void ArgCheck::outputs_do_not_overlap(std::initializer_list<Named> inputs,
                                      std::initializer_list<Named> outputs, bool in_place) const {
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (const Named& in : inputs) {
      if (in_place && same_view(out->tensor, in.tensor)) continue;
      if (byte_ranges_intersect(out->tensor, in.tensor)) {
        fail(ErrorKind::kInvalidArgument, out->name,
             "memory apart from '" + std::string(in.name) + "'" +
                 (in_place ? " (or exactly its view, in place)" : ""),
             "an overlapping view " + out->tensor.describe());
      }
    }
    for (auto other = outputs.begin(); other != out; ++other) {
      if (byte_ranges_intersect(out->tensor, other->tensor)) {
        fail(ErrorKind::kInvalidArgument, out->name,
             "memory apart from '" + std::string(other->name) + "'",
             "an overlapping view " + out->tensor.describe());
      }
    }
  }
}

}  // namespace tileops::ops
