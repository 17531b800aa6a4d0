#include "tileops/ops/embedding.h"

#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "embedding";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input_ids, const Tensor& weight, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input_ids, "input_ids"}, {weight, "weight"}},
                                       {{out, "out"}}, false);
}

// The ids' values are data, not geometry: implementations check them (before writing) at run
// time. Here: dtypes, ranks and shapes only.
Problem make_problem(const Tensor& input_ids, const Tensor& weight, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input_ids, "input_ids");
  check.usable(weight, "weight");
  check.usable(out, "out");
  check.dtype_in(input_ids, "input_ids", {DataType::kInt32, DataType::kInt64});
  if (input_ids.rank() >= kMaxRank) {
    check.fail(ErrorKind::kInvalidArgument, "input_ids",
               "rank <= " + std::to_string(kMaxRank - 1) + " (out adds a dim)",
               "rank " + std::to_string(input_ids.rank()));
  }
  check.rank_is(weight, "weight", 2);
  check.dtype_is(out, "out", weight.dtype(), "same as weight");
  Dims out_shape = input_ids.shape();
  out_shape.push_back(weight.size(1));
  check.shape_is(out, "out", out_shape, "input_ids' shape, then weight's embedding dim");
  check.writable(out, "out");
  check_memory(input_ids, weight, out);
  return Problem{kOp, {TensorDesc::of(input_ids), TensorDesc::of(weight), TensorDesc::of(out)}, {}};
}

}  // namespace

void embedding(const Tensor& input_ids, const Tensor& weight, const Tensor& out,
               const Context& ctx) {
  const Tensor tensors[] = {input_ids, weight, out};
  run_problem(make_problem(input_ids, weight, out), tensors, ctx);
}

Embedding::Embedding(const Tensor& input_ids, const Tensor& weight, const Tensor& out,
                     int implementation_index)
    : prepared_(make_problem(input_ids, weight, out), {"input_ids", "weight", "out"},
                implementation_index) {}

void Embedding::operator()(const Tensor& input_ids, const Tensor& weight, const Tensor& out,
                           const Context& ctx) const {
  check_memory(input_ids, weight, out);
  const Tensor tensors[] = {input_ids, weight, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
