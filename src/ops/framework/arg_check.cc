#include "src/ops/framework/arg_check.h"

namespace tileops::ops {

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

}  // namespace tileops::ops
