// ArgCheck: validation helpers shared by every operator contract. Each failure throws
// tileops::Error naming the operator, the argument, the expectation and what was given.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "tileops/core/error.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

class ArgCheck {
 public:
  explicit ArgCheck(std::string_view op) : op_(op) {}

  [[noreturn]] void fail(ErrorKind kind, std::string_view arg, std::string_view expected,
                         std::string_view actual) const;

  // Data present (unless empty), on a device this build supports, CPU for now.
  void usable(const Tensor& t, std::string_view arg) const;
  void dtype_is(const Tensor& t, std::string_view arg, DataType expected,
                std::string_view why = {}) const;
  void dtype_in(const Tensor& t, std::string_view arg,
                std::initializer_list<DataType> allowed) const;
  void dtype_in(const Tensor& t, std::string_view arg, std::span<const DataType> allowed) const;
  void standard_float(const Tensor& t, std::string_view arg) const;
  void rank_is(const Tensor& t, std::string_view arg, int rank) const;
  void rank_at_least(const Tensor& t, std::string_view arg, int rank) const;
  void shape_is(const Tensor& t, std::string_view arg, const Dims& expected,
                std::string_view why = {}) const;
  void same_device(const Tensor& t, std::string_view arg, const Tensor& reference,
                   std::string_view reference_arg) const;
  // An output's elements must be distinct memory: no broadcast (stride 0 over an extent > 1) and
  // no other self-overlap (e.g. shape [4, 4] with strides [1, 1]), or the result would depend on
  // the order of the writes. Every output and in-place argument of every operator passes here.
  void writable(const Tensor& t, std::string_view arg) const;

  struct Named {
    const Tensor& tensor;
    std::string_view name;
  };
  // Each output may share memory with an input only as exactly the same view (in-place use,
  // when `in_place` allows it) and with no other output at all. Exact for strided views: views
  // whose elements interleave without sharing a byte (k and v halves of one cache buffer, even
  // and odd columns) are apart (memory_overlap.h; a view too costly to settle counts as
  // overlapping).
  void outputs_do_not_overlap(std::initializer_list<Named> inputs,
                              std::initializer_list<Named> outputs, bool in_place = true) const;
  // Its two steps: one output against one input, and two outputs.
  void output_apart_from_input(const Named& out, const Named& in, bool in_place) const;
  void outputs_apart(const Named& out, const Named& other) const;

  std::string_view op() const { return op_; }

 private:
  std::string_view op_;
};

}  // namespace tileops::ops
