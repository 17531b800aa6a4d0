// Builder: matmul and the built-ins softmax, rms_norm and layer_norm. The built-ins expand into
// primitive ops here (in float32, or float64 for float64 inputs) so that every backend gets them
// from the primitives; a backend may pattern-match the expansion to a fused kernel later.
#include "src/tl/builder/tracer.h"
#include "tileops/tl/ops.h"

namespace tileops::tl {
namespace {

DataType compute_type(const Value& x) {
  return x.dtype() == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
}

void need_float_tile(const Value& x, const char* construct, const Loc& loc) {
  if (!x.is_tile() || !is_floating(x.dtype())) {
    trace_error(ErrorKind::kInvalidType, to_loc(loc), construct,
                "needs a float tile, got " + x.type().to_string());
  }
}

void need_row_vector(const Value& x, const Value& v, const char* what, const char* construct,
                     const Loc& loc) {
  if (!v.is_tile() || v.shape().size() != 1 || v.shape()[0] != x.shape().back()) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), construct,
                std::string("shape mismatch: ") + what + " must be a 1-D tile of " +
                    std::to_string(x.shape().back()) + " elements, got " + v.type().to_string());
  }
}

// [..., 1] without its last dim; [1] becomes a scalar (as a full reduction gives).
Value squeeze_last(const Value& v, const Loc& loc) {
  if (v.shape().size() == 1) return reduce_sum(v, {}, false, loc);
  return squeeze(v, -1, loc);
}

}  // namespace

Value matmul(const Value& a, const Value& b, const Value& bias, Loc loc) {
  Tracer& t = Tracer::current("matmul", loc);
  Op op = make_op(OpKind::kMatmul, loc);
  op.operands = {a.id(), b.id()};
  if (bias.valid()) op.operands.push_back(coerce(t, bias.id(), DataType::kFloat32, loc));
  return Value::from_id(t.append1(std::move(op)));
}

Value matmul_acc(const Value& acc, const Value& a, const Value& b, Loc loc) {
  Tracer& t = Tracer::current("matmul_acc", loc);
  Op op = make_op(OpKind::kMatmul, loc);
  op.as<MatmulAttrs>().accumulate = true;
  op.operands = {a.id(), b.id(), acc.id()};
  return Value::from_id(t.append1(std::move(op)));
}

Value softmax(const Value& x, int axis, Loc loc) {
  need_float_tile(x, "softmax", loc);
  const Value f = x.to(compute_type(x), RoundMode::kRint, loc);
  const Value shifted = f - reduce_max(f, {axis}, true, loc);
  const Value e = exp(shifted, loc);
  // One division per row, then a multiply per element (as rms_norm's rsqrt): a division per
  // element is the costliest op of the row's last pass.
  const Value inv = 1.0 / reduce_sum(e, {axis}, true, loc);
  return (e * inv).to(x.dtype(), RoundMode::kRint, loc);
}

Value rms_norm(const Value& x, const Value& gamma, double eps, Loc loc) {
  need_float_tile(x, "rms_norm", loc);
  need_row_vector(x, gamma, "gamma", "rms_norm", loc);
  const DataType ct = compute_type(x);
  const Value f = x.to(ct, RoundMode::kRint, loc);
  const Value ms = reduce_mean(f * f, {-1}, true, loc);
  const Value y = f * rsqrt(ms + eps, loc) * gamma.to(ct, RoundMode::kRint, loc);
  return y.to(x.dtype(), RoundMode::kRint, loc);
}

LayerNorm layer_norm(const Value& x, const Value& gamma, const Value& beta, double eps, Loc loc) {
  return layer_norm(x, gamma, beta, eps, true, loc);
}

LayerNorm layer_norm(const Value& x, const Value& gamma, const Value& beta, double eps,
                     bool keep_dims, Loc loc) {
  need_float_tile(x, "layer_norm", loc);
  need_row_vector(x, gamma, "gamma", "layer_norm", loc);
  need_row_vector(x, beta, "beta", "layer_norm", loc);
  const DataType ct = compute_type(x);
  const Value f = x.to(ct, RoundMode::kRint, loc);
  const Value mean = reduce_mean(f, {-1}, true, loc);
  const Value centred = f - mean;
  const Value rstd = rsqrt(reduce_mean(centred * centred, {-1}, true, loc) + eps, loc);
  const Value y =
      centred * rstd * gamma.to(ct, RoundMode::kRint, loc) + beta.to(ct, RoundMode::kRint, loc);
  if (keep_dims) return LayerNorm{y.to(x.dtype(), RoundMode::kRint, loc), mean, rstd};
  return LayerNorm{y.to(x.dtype(), RoundMode::kRint, loc), squeeze_last(mean, loc),
                   squeeze_last(rstd, loc)};
}

}  // namespace tileops::tl
