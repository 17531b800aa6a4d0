#include "src/ops/framework/arg_check.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "src/ops/framework/memory_overlap.h"

namespace tileops::ops {
namespace {

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
  dtype_in(t, arg, std::span<const DataType>(allowed.begin(), allowed.size()));
}

void ArgCheck::dtype_in(const Tensor& t, std::string_view arg,
                        std::span<const DataType> allowed) const {
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
  if (t.numel() == 0) return;  // nothing is written: no element can be written twice
  for (int i = 0; i < t.rank(); ++i) {
    if (t.shape()[i] > 1 && t.strides()[i] == 0) {
      fail(ErrorKind::kInvalidArgument, arg, "an output without zero (broadcast) strides",
           t.describe());
    }
  }
  // Distinct elements: taken by increasing stride, each dim's stride must pass the farthest
  // element the smaller ones reach. Sufficient, and exact for every permutation, slice or padding
  // of a dense layout; at most 8 dims. Reaches fit in int64 (the Tensor's span does).
  std::array<std::pair<std::int64_t, std::int64_t>, kMaxRank> dims{};  // (stride, extent)
  int n = 0;
  for (int i = 0; i < t.rank(); ++i) {
    if (t.shape()[i] <= 1) continue;
    int at = n++;  // insertion sort: rank <= kMaxRank
    for (; at > 0 && dims[at - 1].first > t.strides()[i]; --at) dims[at] = dims[at - 1];
    dims[at] = {t.strides()[i], t.shape()[i]};
  }
  std::int64_t reach = 0;
  for (int i = 0; i < n; ++i) {
    if (dims[i].first <= reach) {
      fail(ErrorKind::kInvalidArgument, arg,
           "an output whose elements do not overlap (each stride, in increasing order, beyond "
           "the offsets the smaller ones reach)",
           t.describe());
    }
    reach += (dims[i].second - 1) * dims[i].first;
  }
}

void ArgCheck::output_apart_from_input(const Named& out, const Named& in, bool in_place) const {
  if (in_place && same_view(out.tensor, in.tensor)) return;
  if (may_share_memory(out.tensor, in.tensor)) {
    fail(ErrorKind::kInvalidArgument, out.name,
         "memory apart from '" + std::string(in.name) + "'" +
             (in_place ? " (or exactly its view, in place)" : ""),
         "an overlapping view " + out.tensor.describe());
  }
}

void ArgCheck::outputs_apart(const Named& out, const Named& other) const {
  if (may_share_memory(out.tensor, other.tensor)) {
    fail(ErrorKind::kInvalidArgument, out.name,
         "memory apart from '" + std::string(other.name) + "'",
         "an overlapping view " + out.tensor.describe());
  }
}

void ArgCheck::outputs_do_not_overlap(std::initializer_list<Named> inputs,
                                      std::initializer_list<Named> outputs, bool in_place) const {
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (const Named& in : inputs) output_apart_from_input(*out, in, in_place);
    for (auto other = outputs.begin(); other != out; ++other) outputs_apart(*out, *other);
  }
}

}  // namespace tileops::ops
