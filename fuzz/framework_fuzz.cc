// Size/stride validation of the operator framework: check_view_geometry, Tensor and
// TensorStorage against an independent 128-bit oracle, and operators (add, mul, rms_norm,
// linear, pack_linear_weight + linear_packed, cat, flash_attention) on fuzzed geometry. Every
// case ends in a tileops::Error (not Internal, inputs intact) or a run that wrote only its
// outputs' elements, with the exact result checked where it is cheap (add, mul, cat).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "fuzz/fuzz_tensors.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/ops/add.h"
#include "tileops/ops/cat.h"
#include "tileops/ops/flash_attention.h"
#include "tileops/ops/linear.h"
#include "tileops/ops/mul.h"
#include "tileops/ops/packed_linear.h"
#include "tileops/ops/rms_norm.h"

namespace tileops::fuzz {
namespace {

constexpr __int128 kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr __int128 kMaxWork = __int128{1} << 18;

DataType float_or_int(FuzzInput& in) {
  constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                 DataType::kInt32, DataType::kInt64};
  return kTypes[in.below(5)];
}
DataType standard_float(FuzzInput& in) {
  constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  return kTypes[in.below(3)];
}

Dims small_shape(FuzzInput& in, int max_rank) {
  Dims shape;
  const int rank = in.below(max_rank + 1);
  for (int i = 0; i < rank; ++i) shape.push_back(fuzz_extent(in));
  return shape;
}

// Runs `call`; an Error must be a user error with the inputs intact, a run must have written
// only output elements, after which `verify` checks the values.
template <typename Call, typename Verify>
void run(Arena& arena, Call&& call, Verify&& verify) {
  arena.seal();
  try {
    call();
  } catch (const Error& e) {
    arena.check_error(e);
    return;
  }
  arena.check_run();
  verify();
}
template <typename Call>
void run(Arena& arena, Call&& call) {
  run(arena, call, [] {});
}

// check_view_geometry, Tensor and TensorStorage agree with 128-bit arithmetic on any geometry.
void geometry(FuzzInput& in) {
  const int rank = in.below(kMaxRank + 1);
  const bool raw = in.flag();
  std::vector<std::int64_t> shape_values, stride_values;
  for (int i = 0; i < rank; ++i) {
    shape_values.push_back(raw ? in.value<std::int64_t>() : fuzz_extent(in));
    stride_values.push_back(raw ? in.value<std::int64_t>() : fuzz_stride(in));
  }
  const DataType dtype = static_cast<DataType>(in.below(kNumDataTypes));
  const Dims shape(shape_values), strides(stride_values);
  bool valid = true;
  __int128 numel = 1;
  __int128 last = 0;
  bool empty = false;
  for (int i = 0; i < rank; ++i) {
    valid &= shape[i] >= 0 && strides[i] >= 0;
    empty |= shape[i] == 0;
  }
  if (valid && !empty) {
    for (int i = 0; i < rank && valid; ++i) {
      numel *= shape[i];
      last += static_cast<__int128>(shape[i] - 1) * strides[i];
      valid = numel * static_cast<__int128>(size_of(dtype)) <= kInt64Max &&
              (last + 1) * static_cast<__int128>(size_of(dtype)) <= kInt64Max;
    }
  }
  bool accepted = true;
  try {
    check_view_geometry(shape, strides, dtype, "fuzz");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidArgument) finding("geometry error kind", e.what());
    accepted = false;
  }
  if (accepted != valid) {
    finding("check_view_geometry disagrees with 128-bit arithmetic",
            shape.to_string() + " strides " + strides.to_string());
  }
  try {
    Tensor t(nullptr, shape, strides, dtype);
    if (!valid) finding("Tensor accepted an invalid geometry", t.describe());
  } catch (const Error&) {
    if (valid) finding("Tensor refused a valid geometry", shape.to_string());
  }
  if (valid && (last + 1) * static_cast<__int128>(size_of(dtype)) > kMaxBytes && !empty) return;
  try {
    TensorStorage s(shape, strides, dtype);
    if (!valid) finding("TensorStorage accepted an invalid geometry", shape.to_string());
    if (static_cast<std::int64_t>(s.bytes()) != span_bytes(shape, strides, dtype)) {
      finding("TensorStorage size", shape.to_string() + " " + std::to_string(s.bytes()));
    }
    s.fill_bytes(0x5A);
  } catch (const Error&) {
    if (valid) finding("TensorStorage refused a valid geometry", shape.to_string());
  }
}

std::string hex(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%a", v);
  return text;
}

// The broadcast source element of out's element `index` in `t` (NumPy alignment).
std::int64_t broadcast_index(const Tensor& t, const Tensor& out, std::int64_t index) {
  std::int64_t result = 0, scale = 1;
  for (int d = out.rank() - 1, k = t.rank() - 1; d >= 0; --d, --k) {
    const std::int64_t i = index % out.shape()[d];
    index /= out.shape()[d];
    if (k < 0) continue;
    result += (t.shape()[k] == 1 ? 0 : i) * scale;
    scale *= t.shape()[k];
  }
  return result;
}

void elementwise(FuzzInput& in, bool is_add) {
  Arena arena(in);
  const Dims shape = small_shape(in, 4);
  const DataType dtype = float_or_int(in);
  Dims a_shape = shape, b_shape = shape;
  for (int i = 0; i < shape.size(); ++i) {
    if (in.below(4) == 3) a_shape[i] = 1;
    if (in.below(4) == 3) b_shape[i] = 1;
  }
  auto a = arena.input(a_shape, dtype);
  auto b = a ? arena.input(b_shape, dtype) : std::nullopt;
  auto out = b ? arena.output(shape, dtype) : std::nullopt;
  if (!out) return;
  const auto call = [&] { is_add ? ops::add(*a, *b, *out) : ops::mul(*a, *b, *out); };
  run(arena, call, [&] {
    if (arena.aliased() || Arena::self_overlapping(*out)) return;
    const DataType t = out->dtype();
    if (t != DataType::kFloat32 && t != DataType::kInt32 && t != DataType::kInt64) return;
    for (std::int64_t i = 0; i < out->numel(); ++i) {
      const double x = element_as_double(*a, broadcast_index(*a, *out, i));
      const double y = element_as_double(*b, broadcast_index(*b, *out, i));
      const double got = element_as_double(*out, i);
      double want = is_add ? x + y : x * y;
      if (t == DataType::kFloat32) want = is_add ? float(x) + float(y) : float(x) * float(y);
      // Integer results beyond int32 wrap (or lose exactness in a double): not compared.
      if (t != DataType::kFloat32 && !(want > -2147483648.0 && want < 2147483648.0)) continue;
      if (!(got == want || (got != got && want != want))) {
        finding(is_add ? "add result" : "mul result",
                out->describe() + " element " + std::to_string(i) + ": " + hex(got) +
                    " != " + hex(want) + " from " + hex(x) + ", " + hex(y));
      }
    }
  });
}

void rms_norm(FuzzInput& in) {
  Arena arena(in);
  Dims shape = small_shape(in, 3);
  shape.push_back(fuzz_extent(in));
  const DataType dtype = standard_float(in);
  constexpr double kEps[] = {1e-6,
                             0.0,
                             1e-5,
                             -1.0,
                             std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             1e300,
                             0.5};
  const double eps = kEps[in.below(8)];
  auto x = arena.input(shape, dtype);
  auto w = x ? arena.input(Dims{shape.back()}, standard_float(in)) : std::nullopt;
  auto out = w ? arena.output(shape, dtype) : std::nullopt;
  if (!out) return;
  run(arena, [&] { ops::rms_norm(*x, *w, eps, *out); });
}

bool too_much_work(std::initializer_list<std::int64_t> extents) {
  __int128 p = 1;
  for (std::int64_t e : extents) {
    p *= e < 1 ? 1 : e;
    if (p > kMaxWork) return true;
  }
  return false;
}

void linear(FuzzInput& in, bool packed) {
  Arena arena(in);
  const std::int64_t m = fuzz_extent(in), n = fuzz_extent(in), k = fuzz_extent(in);
  const DataType dtype = standard_float(in);
  const bool with_bias = in.flag();
  if (too_much_work({m, n, k})) return;
  auto x = arena.input(Dims{m, k}, dtype);
  auto w = x ? arena.input(Dims{n, k}, dtype) : std::nullopt;
  auto out = w ? arena.output(Dims{m, n}, dtype) : std::nullopt;
  if (!out) return;
  std::optional<Tensor> bias = Tensor();
  if (with_bias) bias = arena.input(Dims{n}, standard_float(in));
  if (!bias) return;
  // Operators size their work from the shapes they accept: bound it by those.
  if (too_much_work({x->numel(), w->numel() / std::max<std::int64_t>(k, 1)}) ||
      too_much_work({w->numel(), out->numel() / std::max<std::int64_t>(n, 1)})) {
    return;
  }
  if (!packed) {
    run(arena, [&] { ops::linear(*x, *w, *bias, *out); });
    return;
  }
  std::int64_t numel = 0;
  try {
    numel = ops::packed_linear_weight_numel(w->size(0), w->size(1), w->dtype());
  } catch (const Error&) {
    return;
  }
  if (numel < 0) finding("packed_linear_weight_numel < 0", w->describe());
  auto pk = arena.output(Dims{numel + (in.below(8) == 7 ? in.below(3) - 1 : 0)}, w->dtype());
  if (!pk) return;
  run(arena, [&] { ops::pack_linear_weight(*w, *pk); });
  Arena second(in);
  auto x2 = second.input(x->shape(), x->dtype());
  auto out2 = x2 ? second.output(out->shape(), out->dtype()) : std::nullopt;
  if (!out2) return;
  run(second, [&] { ops::linear_packed(*x2, *pk, *bias, *out2); });
}

// packed_linear_weight_numel on any n, k: an error or the exact padded count.
void packed_numel(FuzzInput& in) {
  const std::int64_t n = in.flag() ? in.value<std::int64_t>() : fuzz_extent(in);
  const std::int64_t k = in.flag() ? in.value<std::int64_t>() : fuzz_extent(in);
  const DataType dtype = static_cast<DataType>(in.below(kNumDataTypes));
  try {
    const std::int64_t got = ops::packed_linear_weight_numel(n, k, dtype);
    const __int128 rows = (static_cast<__int128>(n) + 15) / 16 * 16;
    const __int128 cols = dtype == DataType::kBFloat16 ? (static_cast<__int128>(k) + 1) / 2 * 2 : k;
    if (n < 0 || k < 0 || got < rows * cols || rows * cols > kInt64Max) {
      finding("packed_linear_weight_numel",
              std::to_string(n) + " x " + std::to_string(k) + " gave " + std::to_string(got));
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) finding("packed_linear_weight_numel error", e.what());
  }
}

void cat(FuzzInput& in) {
  Arena arena(in);
  Dims shape = small_shape(in, 3);
  if (shape.empty()) shape.push_back(fuzz_extent(in));
  const int dim = in.below(2 * shape.size() + 2) - shape.size() - 1;
  const int axis = normalize_dim(dim, shape.size());
  const DataType dtype = static_cast<DataType>(in.below(kNumDataTypes));
  std::vector<Tensor> parts;
  std::int64_t total = 0;
  for (int i = 0, count = 1 + in.below(4); i < count; ++i) {
    Dims part = shape;
    if (axis >= 0) part[axis] = in.below(4);
    auto t = arena.input(part, dtype);
    if (!t) return;
    parts.push_back(*t);
    if (axis >= 0) total += t->rank() == shape.size() ? t->shape()[axis] : 0;
  }
  if (axis >= 0) shape[axis] = total;
  auto out = arena.output(shape, dtype);
  if (!out) return;
  run(
      arena, [&] { ops::cat(parts, dim, *out); },
      [&] {
        // An empty result's extents are unbounded: nothing to compare, no product to form.
        if (arena.aliased() || Arena::self_overlapping(*out) || out->numel() == 0) return;
        const int d = normalize_dim(dim, out->rank());
        std::int64_t inner = 1;
        for (int i = d + 1; i < out->rank(); ++i) inner *= out->shape()[i];
        for (std::int64_t i = 0; i < out->numel(); ++i) {
          const std::int64_t outer = i / (inner * out->shape()[d]);
          std::int64_t along = i / inner % out->shape()[d];
          std::size_t p = 0;
          while (p + 1 < parts.size() && along >= parts[p].shape()[d])
            along -= parts[p++].shape()[d];
          const std::int64_t j = (outer * parts[p].shape()[d] + along) * inner + i % inner;
          if (std::memcmp(element_address(*out, i), element_address(parts[p], j),
                          out->element_size()) != 0) {
            finding("cat result", out->describe() + " element " + std::to_string(i));
          }
        }
      });
}

std::vector<std::int32_t> fuzz_offsets(FuzzInput& in, std::int64_t batch, std::int64_t total) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(batch + 1), 0);
  const bool raw = in.below(4) == 3;
  for (std::int64_t i = 1; i <= batch; ++i) {
    v[i] = raw ? static_cast<std::int32_t>(fuzz_stride(in))
               : static_cast<std::int32_t>(
                     i == batch ? total : std::min<std::int64_t>(total, v[i - 1] + in.below(6)));
  }
  return v;
}

void flash_attention(FuzzInput& in) {
  Arena arena(in);
  ops::AttentionAttributes attrs;
  const std::int64_t hkv = 1 + in.below(3);
  attrs.num_kv_heads = in.below(8) == 7 ? fuzz_extent(in) : hkv;
  attrs.num_heads = hkv * (1 + in.below(3));
  attrs.head_size = in.below(4) == 3 ? fuzz_extent(in) : 8 * (1 + in.below(4));
  attrs.causal = in.flag();
  attrs.window_left = in.below(4) == 3 ? fuzz_stride(in) : -1;
  attrs.window_right = in.below(4) == 3 ? fuzz_stride(in) : -1;
  const std::int64_t tq = fuzz_extent(in), tkv = fuzz_extent(in), batch = 1 + in.below(3);
  const bool paged = in.flag();
  const DataType dtype = standard_float(in);
  const std::int64_t h = attrs.num_heads, d = attrs.head_size;
  if (too_much_work({tq, tkv, h, d})) return;
  auto q = arena.input(Dims{tq, h, d}, dtype);
  if (!q) return;
  std::optional<Tensor> k, v, block_table = Tensor();
  std::optional<Tensor> cu_q = arena.int32_values(fuzz_offsets(in, batch, tq), Dims{batch + 1});
  std::optional<Tensor> cu_kv;
  if (paged) {
    const std::int64_t block = 1 + in.below(16), blocks = 1 + in.below(6), per = 1 + in.below(4);
    k = arena.input(Dims{blocks, block, hkv, d}, dtype);
    v = k ? arena.input(Dims{blocks, block, hkv, d}, dtype) : std::nullopt;
    std::vector<std::int32_t> table(static_cast<std::size_t>(batch * per));
    for (auto& e : table)
      e = in.below(8) == 7
              ? static_cast<std::int32_t>(static_cast<std::uint32_t>(fuzz_stride(in)) - 1u)
              : in.below(static_cast<int>(blocks));
    block_table = arena.int32_values(table, Dims{batch, per});
    cu_kv = arena.int32_values(
        fuzz_offsets(in, batch, std::min<std::int64_t>(tkv, batch * per * block)), Dims{batch + 1});
  } else {
    k = arena.input(Dims{tkv, hkv, d}, dtype);
    v = k ? arena.input(Dims{tkv, hkv, d}, dtype) : std::nullopt;
    cu_kv = arena.int32_values(fuzz_offsets(in, batch, tkv), Dims{batch + 1});
  }
  auto out = v ? arena.output(Dims{tq, h, d}, dtype) : std::nullopt;
  if (!out) return;
  if (in.below(8) == 7) cu_q = Tensor();
  if (too_much_work({q->numel(), k->numel()}) || too_much_work({q->numel(), v->numel()})) return;
  run(arena, [&] { ops::flash_attention(*q, *k, *v, *cu_q, *cu_kv, *block_table, attrs, *out); });
}

}  // namespace
}  // namespace tileops::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tileops::fuzz;
  FuzzInput in(data, size);
  switch (in.below(9)) {
    case 0:
      geometry(in);
      break;
    case 1:
      elementwise(in, true);
      break;
    case 2:
      elementwise(in, false);
      break;
    case 3:
      rms_norm(in);
      break;
    case 4:
      linear(in, false);
      break;
    case 5:
      linear(in, true);
      break;
    case 6:
      packed_numel(in);
      break;
    case 7:
      cat(in);
      break;
    default:
      flash_attention(in);
      break;
  }
  return 0;
}
