// add, mul, swiglu and silu_and_mul as one tile-language kernel: out = f(a, b) over a folded
// rank-3 view (folded_loop.h) with runtime extents and strides, so one compiled kernel per
// (operation, dtype) serves every shape, broadcast and layout. Each block takes a contiguous run
// of [1, 1, kTile] tiles (a long row is split between blocks too); 16-bit floats compute in
// float32 and round once on store, integers wrap.
#include <memory>

#include "src/ops/contracts/add.decl.h"
#include "src/ops/contracts/mul.decl.h"
#include "src/ops/contracts/silu_and_mul.decl.h"
#include "src/ops/contracts/swiglu.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/tl/folded_loop.h"
#include "src/ops/framework/broadcast.h"
#include "tileops/tl.h"

namespace tileops::ops::cpu {
namespace {

namespace tl = ::tileops::tl;
using tl_impl::as_f32;
using tl_impl::exp2_coarse;
using tl_impl::FoldedLoop;
using tl_impl::kFastMath;
using tl_impl::kLog2e;
using tl_impl::pointer_at;

constexpr std::int64_t kTile = 1024;

enum class Binary { kAdd = 0, kMul = 1, kSwiglu = 2 };  // swiglu: a · silu(b)

// silu(g) = g / (1 + e^-g), exactly 0 below -87.3 where e^-g overflows float32 (the native
// operators' definition: never NaN for a finite g). Results rounded to 16 bits take e^-g from
// exp2_coarse, as the native kernels do: a bfloat16 swiglu is bound by its arithmetic
// (bench/results/cpu-tuning.md).
tl::Value silu_f32(const tl::Value& g, DataType out) {
  const tl::Value e = out == DataType::kFloat32 ? tl::exp(-g) : exp2_coarse(g * -kLog2e);
  return tl::where(g < -87.3, 0.0, g / (1.0 + e));
}

tl::Value combine(const tl::Value& x, const tl::Value& y, Binary op, DataType dtype) {
  if (!is_floating(dtype)) return op == Binary::kAdd ? x + y : x * y;
  const tl::Value a = as_f32(x), b = as_f32(y);
  const tl::Value r = op == Binary::kAdd   ? a + b
                      : op == Binary::kMul ? a * b
                                           : a * silu_f32(b, dtype);
  return dtype == DataType::kFloat32 ? r : r.to(dtype);
}

const tl::Kernel& binary_kernel() {
  static const tl::Kernel kernel = tl::jit(
      "tileops_binary",
      [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress out, tl::Int d0, tl::Int d1,
         tl::Int d2, tl::Int sa0, tl::Int sa1, tl::Int sa2, tl::Int sb0, tl::Int sb1, tl::Int sb2,
         tl::Int so0, tl::Int so1, tl::Int so2, tl::ConstExpr<int> op) {
        const tl::Value ta = tl::tensor(a, {d0, d1, d2}, {sa0, sa1, sa2});
        const tl::Value tb = tl::tensor(b, {d0, d1, d2}, {sb0, sb1, sb2});
        const tl::Value to = tl::tensor(out, {d0, d1, d2}, {so0, so1, so2});
        const tl::Value per_row = tl::ceildiv(d2, kTile);
        const tl::Value total = d0 * d1 * per_row;
        const tl::Value per_block = tl::ceildiv(total, tl::block_num());
        const tl::Value begin = tl::block_idx() * per_block;
        for (tl::Value t : tl::range(begin, tl::minimum(begin + per_block, total))) {
          const tl::Value row = tl::floordiv(t, per_row);
          const tl::Value col = (t - row * per_row) * kTile;
          const tl::Value i0 = tl::floordiv(row, d1);
          const tl::Value i1 = row - i0 * d1;
          // The next tile's operands requested now: the code generator's own prefetch
          // extrapolates from the last two tiles, which misses every row start of a strided
          // view (silu_and_mul's halves: a quarter of its tiles at [4096, 8192]).
          const tl::Value next = t + 1, next_row = tl::floordiv(next, per_row);
          const tl::Value next0 = tl::floordiv(next_row, d1);
          const tl::IndexList at{next0, next_row - next0 * d1, (next - next_row * per_row) * kTile};
          tl::prefetch(ta, {1, 1, kTile}, at);
          tl::prefetch(tb, {1, 1, kTile}, at);
          const tl::Value x = tl::load(ta, {1, 1, kTile}, {i0, i1, col});
          const tl::Value y = tl::load(tb, {1, 1, kTile}, {i0, i1, col});
          tl::store(combine(x, y, static_cast<Binary>(*op), out.dtype()), to, {i0, i1, col});
        }
      },
      kFastMath);
  return kernel;
}

// Launches out = f(a, b) on ctx's threads over `shape` with a, b, out viewed through the given
// aligned strides.
void launch_binary(const Context& ctx, Binary op, const Tensor& a, const Dims& a_strides,
                   std::int64_t a_offset, const Tensor& b, const Dims& b_strides,
                   std::int64_t b_offset, const Tensor& out) {
  const Dims strides[] = {a_strides, b_strides, out.strides()};
  const FoldedLoop loop(out.shape(), strides, false);
  const auto& d = loop.shape();
  const auto &sa = loop.strides(0), &sb = loop.strides(1), &so = loop.strides(2);
  loop.for_each_launch([&](const std::int64_t* offsets) {
    binary_kernel().launch_on(ctx.threads(), 0, pointer_at(a, a_offset + offsets[0]),
                              pointer_at(b, b_offset + offsets[1]), pointer_at(out, offsets[2]),
                              d[0], d[1], d[2], sa[0], sa[1], sa[2], sb[0], sb[1], sb[2], so[0],
                              so[1], so[2], static_cast<int>(op));
  });
}

// add, mul: (input, other, out) with NumPy broadcasting.
class BroadcastBinaryTl final : public Operator {
 public:
  BroadcastBinaryTl(const Problem& p, Binary op) : op_(op) {
    const TensorDesc& out = p.tensors[kOut];
    a_strides_ = broadcast_strides(p.tensors[kInput].shape, p.tensors[kInput].strides, out.shape);
    b_strides_ = broadcast_strides(p.tensors[kOther].shape, p.tensors[kOther].strides, out.shape);
  }
  void run(std::span<const Tensor> t, const Context& ctx) const override {
    launch_binary(ctx, op_, t[kInput], a_strides_, 0, t[kOther], b_strides_, 0, t[kOut]);
  }

 private:
  // Argument positions from add's declaration; mul declares the same.
  static constexpr int kInput = tensor_index(decls::add, "input");
  static constexpr int kOther = tensor_index(decls::add, "other");
  static constexpr int kOut = tensor_index(decls::add, "out");
  static_assert(kInput == tensor_index(decls::mul, "input") &&
                kOther == tensor_index(decls::mul, "other") &&
                kOut == tensor_index(decls::mul, "out"));

 private:
  Binary op_;
  Dims a_strides_, b_strides_;
};

// swiglu: (input, gate, out), same shapes: out = input · silu(gate).
class SwigluTl final : public Operator {
 public:
  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const Tensor& input = t[tensor_index(decls::swiglu, "input")];
    const Tensor& gate = t[tensor_index(decls::swiglu, "gate")];
    launch_binary(ctx, Binary::kSwiglu, input, input.strides(), 0, gate, gate.strides(), 0,
                  t[tensor_index(decls::swiglu, "out")]);
  }
};

// silu_and_mul: (input[..., 2d, ...], out[..., d, ...]) split along `dim`: the gate is the first
// half, the multiplier the second, both viewed with input's strides at out's shape.
class SiluAndMulTl final : public Operator {
 public:
  explicit SiluAndMulTl(const Problem& p)
      : dim_(static_cast<int>(p.attributes[attribute_index(decls::silu_and_mul, "dim")])) {}
  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const Tensor& input = t[tensor_index(decls::silu_and_mul, "input")];
    const Tensor& out = t[tensor_index(decls::silu_and_mul, "out")];
    const std::int64_t half = out.size(dim_) * input.stride(dim_);
    launch_binary(ctx, Binary::kSwiglu, input, input.strides(), half, input, input.strides(), 0,
                  out);
  }

 private:
  int dim_;
};

}  // namespace

void register_tl_elementwise(std::vector<Implementation>& out) {
  out.push_back({"add", DeviceType::kCpu, 1, "tl", [](const Problem& p) {
                   return std::make_unique<BroadcastBinaryTl>(p, Binary::kAdd);
                 }});
  out.push_back({"mul", DeviceType::kCpu, 1, "tl", [](const Problem& p) {
                   return std::make_unique<BroadcastBinaryTl>(p, Binary::kMul);
                 }});
  out.push_back({"silu_and_mul", DeviceType::kCpu, 1, "tl",
                 [](const Problem& p) { return std::make_unique<SiluAndMulTl>(p); }});
  out.push_back({"swiglu", DeviceType::kCpu, 1, "tl",
                 [](const Problem&) { return std::make_unique<SwigluTl>(); }});
}

}  // namespace tileops::ops::cpu
