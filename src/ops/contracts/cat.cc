#include "tileops/ops/cat.h"

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/checked_size.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "cat";

std::string input_name(std::size_t i) { return "tensors[" + std::to_string(i) + "]"; }

// PreparedOperator keeps views of its argument names, so the names of a variable number of
// inputs must live as long as the process; the table only grows to the largest count seen.
std::string_view persistent_input_name(std::size_t i) {
  static std::mutex mutex;
  static std::deque<std::string> names;  // a deque never moves its elements
  const std::lock_guard<std::mutex> lock(mutex);
  while (names.size() <= i) names.push_back(input_name(names.size()));
  return names[i];
}

// out must not overlap any input (checked on every call: data pointers are not part of the
// cached geometry).
void check_memory(std::span<const Tensor> tensors, const Tensor& out) {
  const ArgCheck check(kOp);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    check.outputs_do_not_overlap({{tensors[i], persistent_input_name(i)}}, {{out, "out"}}, false);
  }
}

Problem make_problem(std::span<const Tensor> tensors, int dim, const Tensor& out) {
  const ArgCheck check(kOp);
  if (tensors.empty()) {
    check.fail(ErrorKind::kInvalidArgument, "tensors", "at least one tensor", "an empty list");
  }
  const Tensor& first = tensors[0];
  check.usable(out, "out");
  if (first.rank() == 0) {
    check.fail(ErrorKind::kInvalidArgument, "tensors[0]",
               "rank >= 1 (a scalar has no dim to "
               "concatenate along)",
               "rank 0 " + first.describe());
  }
  const int axis = normalize_dim(dim, first.rank());
  if (axis < 0) {
    check.fail(ErrorKind::kInvalidArgument, "dim",
               "a dim in [" + std::to_string(-first.rank()) + ", " + std::to_string(first.rank()) +
                   ") (the rank of the tensors)",
               std::to_string(dim));
  }
  Dims out_shape = first.shape();
  out_shape[axis] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const std::string name = input_name(i);
    check.usable(t, name);
    check.dtype_is(t, name, first.dtype(), "same as tensors[0]");
    check.rank_is(t, name, first.rank());
    Dims expected = first.shape();
    expected[axis] = t.shape()[axis];
    check.shape_is(t, name, expected,
                   "tensors[0]'s extents except along dim " + std::to_string(axis));
    out_shape[axis] = checked_add(out_shape[axis], t.shape()[axis],
                                  "cat: argument '" + name + "': the extents summed along dim");
  }
  check.dtype_is(out, "out", first.dtype(), "same as the tensors");
  check.shape_is(out, "out", out_shape, "the tensors' shape with their extents along dim summed");
  check.writable(out, "out");
  check_memory(tensors, out);

  Problem problem{kOp, {}, {static_cast<double>(axis)}};
  problem.tensors.reserve(tensors.size() + 1);
  for (const Tensor& t : tensors) problem.tensors.push_back(TensorDesc::of(t));
  problem.tensors.push_back(TensorDesc::of(out));
  return problem;
}

// The Problem's tensor order: every input, then out.
std::vector<Tensor> arguments(std::span<const Tensor> tensors, const Tensor& out) {
  std::vector<Tensor> all(tensors.begin(), tensors.end());
  all.push_back(out);
  return all;
}

std::vector<std::string_view> argument_names(std::size_t num_inputs) {
  std::vector<std::string_view> names;
  names.reserve(num_inputs + 1);
  for (std::size_t i = 0; i < num_inputs; ++i) names.push_back(persistent_input_name(i));
  names.push_back("out");
  return names;
}

}  // namespace

void cat(std::span<const Tensor> tensors, int dim, const Tensor& out, const Context& ctx) {
  const Problem problem = make_problem(tensors, dim, out);
  run_problem(problem, arguments(tensors, out), ctx);
}

Cat::Cat(std::span<const Tensor> tensors, int dim, const Tensor& out, int implementation_index)
    : prepared_(make_problem(tensors, dim, out), argument_names(tensors.size()),
                implementation_index) {}

void Cat::operator()(std::span<const Tensor> tensors, const Tensor& out, const Context& ctx) const {
  const std::size_t expected = prepared_.problem().tensors.size() - 1;
  if (tensors.size() != expected) {
    throw_argument_error(ErrorKind::kInvalidArgument, kOp, "tensors",
                         std::to_string(expected) +
                             " tensors (the count this instance was "
                             "built for)",
                         std::to_string(tensors.size()));
  }
  check_memory(tensors, out);
  prepared_.run(arguments(tensors, out), ctx);
}

}  // namespace tileops::ops
