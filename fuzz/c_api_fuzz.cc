// The C API's tensor descriptor import (src/c_api/bridge.cc) through tileops_add, tileops_cast,
// tileops_rms_norm, tileops_cat, tileops_pack_linear_weight and tileops_linear_packed: any
// ndim, dtype, device, NULL shape, strides or data, and extents and strides up to the int64
// limits. Valid descriptors are backed by buffers of exactly their span; a descriptor the
// contract calls invalid points at 16 bytes, so that using it instead of refusing it is an
// ASan report. Every call returns a documented status; a failure leaves a message and
// the inputs intact.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "fuzz/fuzz_tensors.h"
#include "tileops/c/tileops.h"

namespace tileops::fuzz {
namespace {

struct Descriptor {
  tileops_tensor t{};
  std::unique_ptr<std::int64_t[]> shape, strides;
  std::unique_ptr<unsigned char[]> bytes;
  std::int64_t size = 0;
  bool input = true;
  std::vector<unsigned char> before;
};

constexpr std::int32_t kOddInts[] = {
    -1, 9, 64, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(),
    13, 14};

// False for a valid descriptor too large to back (the case is skipped).
bool decode(FuzzInput& in, Descriptor& d, const Dims& suggested, std::int32_t dtype, bool input) {
  d.input = input;
  const Dims shape = mutate_shape(in, suggested);
  const std::uint8_t b = in.byte();
  d.t.ndim = b < 240 ? shape.size() : kOddInts[b % std::size(kOddInts)];
  d.t.dtype = in.byte() < 240 ? dtype : kOddInts[in.below(7)];
  d.t.device_type = in.byte() < 248 ? TILEOPS_DEVICE_CPU : in.below(4) - 1;
  d.t.device_index = in.byte() < 248 ? 0 : -in.below(2);
  const int n = d.t.ndim >= 0 && d.t.ndim <= 16 ? d.t.ndim : 1;
  const Dims dims_hint =
      n <= kMaxRank ? Dims(std::span(shape.begin(), std::min(n, shape.size()))) : Dims();
  if (in.below(32) != 31) {
    d.shape.reset(new std::int64_t[n]);
    for (int i = 0; i < n; ++i) d.shape[i] = i < dims_hint.size() ? dims_hint[i] : fuzz_extent(in);
  }
  if (in.flag()) {
    d.strides.reset(new std::int64_t[n]);
    Dims for_strides;
    for (int i = 0; i < std::min(n, kMaxRank); ++i) for_strides.push_back(d.shape ? d.shape[i] : 1);
    const Dims s = fuzz_strides(in, for_strides);
    for (int i = 0; i < n; ++i) d.strides[i] = i < s.size() ? s[i] : fuzz_stride(in);
  }
  d.t.shape = d.shape.get();
  d.t.strides = d.strides.get();

  // The contract, in 128-bit arithmetic.
  bool valid = d.t.ndim >= 0 && d.t.ndim <= TILEOPS_MAX_RANK && (d.shape || d.t.ndim == 0) &&
               d.t.dtype >= 0 && d.t.dtype < kNumDataTypes && d.t.device_type == 0 &&
               d.t.device_index == 0;
  __int128 numel = 1, last = 0;
  bool empty = false;
  for (int i = 0; valid && i < d.t.ndim; ++i) {
    const std::int64_t stride = d.strides ? d.strides[i] : 0;
    valid = d.shape[i] >= 0 && stride >= 0;
    empty |= d.shape[i] == 0;
  }
  if (valid && !d.strides) {
    Dims s;
    for (int i = 0; i < d.t.ndim; ++i) s.push_back(d.shape[i]);
    __int128 p = 1;
    for (int i = 0; i < s.size() && p <= std::numeric_limits<std::int64_t>::max(); ++i) {
      p *= std::max<std::int64_t>(s[i], 1);
    }
    valid = p <= std::numeric_limits<std::int64_t>::max();
    if (valid) {
      std::int64_t step = 1;
      d.strides.reset(new std::int64_t[d.t.ndim > 0 ? d.t.ndim : 1]);
      for (int i = d.t.ndim - 1; i >= 0; --i) {
        d.strides[i] = step;
        step *= std::max<std::int64_t>(s[i], 1);
      }
    }
  }
  const std::size_t esize = valid ? size_of(static_cast<DataType>(d.t.dtype)) : 1;
  // Divided, not multiplied: one extent and stride past the limit reach about 2^126, and
  // times the element size that would overflow even 128 bits.
  const __int128 limit = std::numeric_limits<std::int64_t>::max() / static_cast<__int128>(esize);
  for (int i = 0; valid && !empty && i < d.t.ndim; ++i) {
    numel *= d.shape[i];
    last += static_cast<__int128>(d.shape[i] - 1) * d.strides[i];
    valid = numel <= limit && last + 1 <= limit;
  }
  const __int128 bytes = empty || !valid ? 0 : (last + 1) * static_cast<__int128>(esize);
  if (valid && bytes > kMaxBytes) return false;
  d.size = valid ? static_cast<std::int64_t>(bytes) : 16;
  d.bytes.reset(new unsigned char[d.size > 0 ? d.size : 1]);
  for (std::int64_t i = 0; i < d.size; ++i) d.bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  d.t.data = in.below(32) == 31 ? nullptr : d.bytes.get();
  return true;
}

void check(tileops_status status, std::vector<Descriptor*> ds) {
  if (status == TILEOPS_INTERNAL_ERROR) finding("internal error", tileops_last_error());
  if (status < TILEOPS_OK || status > TILEOPS_COMPILE_ERROR) finding("status", "out of range");
  if (status != TILEOPS_OK && tileops_last_error()[0] == '\0') finding("no message", "");
  for (Descriptor* d : ds) {
    if (d->input && d->size > 0 && std::memcmp(d->before.data(), d->bytes.get(), d->size) != 0) {
      finding("an input was written", tileops_last_error());
    }
  }
}

void seal(std::vector<Descriptor*> ds) {
  for (Descriptor* d : ds) d->before.assign(d->bytes.get(), d->bytes.get() + d->size);
}

}  // namespace
}  // namespace tileops::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tileops;
  using namespace tileops::fuzz;
  FuzzInput in(data, size);
  const int op = in.below(6);
  Dims shape;
  for (int i = 0, rank = in.below(4); i < rank; ++i) shape.push_back(fuzz_extent(in));
  constexpr std::int32_t kTypes[] = {TILEOPS_FLOAT32, TILEOPS_FLOAT16, TILEOPS_BFLOAT16,
                                     TILEOPS_INT32};
  const std::int32_t dtype = kTypes[in.below(4)];
  Descriptor a, b, c;
  if (op == 0 || op == 1) {  // add, cast
    if (!decode(in, a, shape, dtype, true) || !decode(in, b, shape, dtype, op == 0) ||
        (op == 0 && !decode(in, c, shape, dtype, false))) {
      return 0;
    }
    seal({&a, &b, &c});
    check(op == 0 ? tileops_add(&a.t, &b.t, &c.t, nullptr) : tileops_cast(&a.t, &b.t, nullptr),
          {&a, &b});
  } else if (op == 2) {  // rms_norm
    const Dims w_shape = shape.empty() ? Dims{} : Dims{shape.back()};
    if (!decode(in, a, shape, dtype, true) || !decode(in, b, w_shape, dtype, true) ||
        !decode(in, c, shape, dtype, false)) {
      return 0;
    }
    seal({&a, &b, &c});
    check(tileops_rms_norm(&a.t, &b.t, 1e-6, &c.t, nullptr), {&a, &b});
  } else if (op == 3) {  // cat: a and b along dim, into c
    const int dim = in.below(9) - 4;
    Dims out_shape = shape;
    const int axis = normalize_dim(dim, shape.size());
    if (axis >= 0 && shape[axis] >= 0 && shape[axis] < (std::int64_t{1} << 40))
      out_shape[axis] *= 2;
    if (!decode(in, a, shape, dtype, true) || !decode(in, b, shape, dtype, true) ||
        !decode(in, c, out_shape, dtype, false)) {
      return 0;
    }
    const tileops_tensor parts[2] = {a.t, b.t};
    seal({&a, &b, &c});
    check(tileops_cat(parts, 2, dim, &c.t, nullptr), {&a, &b});
  } else if (op == 4) {  // pack_linear_weight, then linear_packed
    const std::int64_t n = fuzz_extent(in), k = fuzz_extent(in);
    std::int64_t numel = -1;
    const tileops_status s = tileops_packed_linear_weight_numel(n, k, dtype, &numel);
    check(s, {});
    if (s != TILEOPS_OK || numel > (std::int64_t{1} << 40)) return 0;
    if (!decode(in, a, Dims{n, k}, dtype, true) ||
        !decode(in, b, Dims{numel + (in.below(8) == 7 ? in.below(3) - 1 : 0)}, dtype, false)) {
      return 0;
    }
    seal({&a, &b});
    const tileops_status packed = tileops_pack_linear_weight(&a.t, &b.t, nullptr);
    check(packed, {&a});
    if (packed != TILEOPS_OK) return 0;
    const std::int64_t m = in.below(20);
    b.input = true;
    if (!decode(in, a, Dims{m, k}, dtype, true) || !decode(in, c, Dims{m, n}, dtype, false)) {
      return 0;
    }
    seal({&a, &b, &c});
    check(tileops_linear_packed(&a.t, &b.t, nullptr, &c.t, nullptr), {&a, &b});
  } else {  // packed_linear_weight_numel on raw values
    std::int64_t numel = 0;
    check(tileops_packed_linear_weight_numel(in.value<std::int64_t>(), in.value<std::int64_t>(),
                                             in.value<std::int32_t>(), &numel),
          {});
  }
  return 0;
}
