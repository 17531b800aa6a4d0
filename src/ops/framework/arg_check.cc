#include "src/ops/framework/arg_check.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace tileops::ops {
namespace {

// A view as `rows` runs of `length` contiguous bytes, `stride` bytes apart: a contiguous inner
// block under outer dims that collapse into one uniform stride (e.g. q and k sliced out of one
// fused qkv buffer). False when the view has no such form.
struct Rows {
  const char* begin;
  std::int64_t rows, length, stride;
};

bool as_rows(const Tensor& t, Rows& out) {
  const auto size = static_cast<std::int64_t>(t.element_size());
  std::int64_t inner = 1;  // elements of the contiguous inner block
  int dim = t.rank() - 1;
  for (; dim >= 0 && (t.shape()[dim] == 1 || t.strides()[dim] == inner); --dim) {
    inner *= t.shape()[dim];
  }
  std::int64_t rows = 1, stride = 0;
  for (; dim >= 0; --dim) {
    if (t.shape()[dim] == 1) continue;
    if (t.strides()[dim] == 0) return false;  // a broadcast dim revisits its bytes
    if (stride != 0 && t.strides()[dim] != stride * rows) return false;
    if (stride == 0) stride = t.strides()[dim];
    rows *= t.shape()[dim];
  }
  out = {static_cast<const char*>(t.data()), rows, inner * size, stride * size};
  return rows == 1 || out.length <= out.stride;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

// Whether row i of `a` and row j of `b` intersect for some i, j, with both row strides `stride`:
// b's row j starts delta + (j - i)·stride bytes after a's row i.
bool rows_intersect(const Rows& a, const Rows& b, std::int64_t stride) {
  const std::int64_t delta = b.begin - a.begin;
  // Need -b.length < delta + t·stride < a.length for some t = j - i.
  const std::int64_t t_low = std::max(floor_div(-b.length - delta, stride) + 1, 1 - a.rows);
  const std::int64_t t_high =
      std::min(-floor_div(-(a.length - delta), stride) - 1, b.rows - 1);  // ceil - 1
  return t_low <= t_high;
}

// Whether the bytes two views can touch intersect; empty views touch nothing. Strides are
// non-negative (Tensor's invariant), so a view spans [data, data + extent]; views whose extents
// meet may still interleave without sharing a byte, which rows_intersect decides.
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
  if (!(a_begin < b_end && b_begin < a_end)) return false;
  Rows ra{}, rb{};
  if (!as_rows(a, ra) || !as_rows(b, rb)) return true;
  if (ra.rows == 1 && rb.rows == 1) return true;  // two runs whose extents meet
  const std::int64_t stride = ra.rows == 1 ? rb.stride : ra.stride;
  if ((ra.rows > 1 && ra.stride != stride) || (rb.rows > 1 && rb.stride != stride)) return true;
  return rows_intersect(ra, rb, stride);
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
  if (byte_ranges_intersect(out.tensor, in.tensor)) {
    fail(ErrorKind::kInvalidArgument, out.name,
         "memory apart from '" + std::string(in.name) + "'" +
             (in_place ? " (or exactly its view, in place)" : ""),
         "an overlapping view " + out.tensor.describe());
  }
}

void ArgCheck::outputs_apart(const Named& out, const Named& other) const {
  if (byte_ranges_intersect(out.tensor, other.tensor)) {
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
