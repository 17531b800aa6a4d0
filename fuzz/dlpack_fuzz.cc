// The DLPack import of the Python package (tensor_from_dltensor, python/src/dlpack_import.cc):
// any ndim, dtype, device, NULL shape/strides/data, byte offsets and extents and strides up to
// the int64 limits. A DLTensor whose view (by the importer's own rules, in 128-bit arithmetic)
// fits in 1 MiB is backed by a buffer of exactly its byte offset plus span; any other points at
// 16 bytes. An accepted view must lie inside its buffer, and every element is read (ASan);
// a refusal is a tileops::Error that names the operator and argument.
#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_tensors.h"
#include "python/src/dlpack_import.h"

namespace tileops::fuzz {
namespace {

struct DType {
  std::uint8_t code, bits;
};
constexpr DType kTypes[] = {{kDLFloat, 32}, {kDLFloat, 16}, {kDLBfloat, 16},
                            {kDLFloat, 64}, {kDLInt, 32},   {kDLInt, 64},
                            {kDLInt, 8},    {kDLUInt, 8},   {kDLInt, 16}};
// Declared enumerators only: a C++ load of any other value is itself undefined.
constexpr DLDeviceType kDevices[] = {kDLCUDA,  kDLCUDAHost, kDLOpenCL, kDLVulkan,
                                     kDLMetal, kDLROCM,     kDLExtDev, kDLCUDAManaged};
constexpr std::uint64_t kOffsets[] = {0,
                                      1,
                                      4,
                                      64,
                                      std::uint64_t{1} << 63,
                                      std::numeric_limits<std::uint64_t>::max(),
                                      std::numeric_limits<std::uint64_t>::max() - 15};

void run(FuzzInput& in) {
  DLTensor t{};
  const std::uint8_t rank_byte = in.byte();
  t.ndim = rank_byte < 240 ? rank_byte % 5 : static_cast<std::int32_t>(rank_byte) - 246;
  const DType type = kTypes[in.below(std::size(kTypes))];
  t.dtype = {type.code, type.bits, 1};
  if (in.below(16) == 15) t.dtype = {in.byte(), in.byte(), static_cast<std::uint16_t>(in.byte())};
  t.device = {in.below(16) == 15 ? kDevices[in.below(std::size(kDevices))] : kDLCPU, 0};
  const int n = t.ndim > 0 && t.ndim <= 16 ? t.ndim : 1;
  std::unique_ptr<std::int64_t[]> shape(new std::int64_t[n]), strides;
  for (int i = 0; i < n; ++i) shape[i] = fuzz_extent(in);
  if (in.below(32) != 31) t.shape = shape.get();
  const int stride_mode = in.below(4);
  if (stride_mode != 0) {
    strides.reset(new std::int64_t[n]);
    std::uint64_t step = 1;
    for (int i = n - 1; i >= 0; --i) {
      strides[i] = stride_mode == 3 ? fuzz_stride(in) : static_cast<std::int64_t>(step);
      if (stride_mode == 2 && i == n - 1) strides[i] = -1 * in.below(2);
      step *= static_cast<std::uint64_t>(shape[i]) + (stride_mode == 2 ? 1 : 0);
    }
    t.strides = strides.get();
  }
  t.byte_offset = in.below(8) == 7 ? kOffsets[in.below(std::size(kOffsets))] : 0;
  const bool writable = in.flag(), read_only = in.below(8) == 7;

  // The importer's rules: every extent >= 0 and their product (0 counted as 1) within int64; a
  // size-1 dim's stride is ignored; an empty tensor spans nothing; a non-empty one has strides
  // >= 0 and its element and byte counts and byte span within int64. Terms are capped before
  // they could leave 128 bits.
  constexpr __int128 kLimit = std::numeric_limits<std::int64_t>::max();
  bool geometry_ok = t.ndim >= 0 && t.ndim <= kMaxRank && (t.shape || t.ndim == 0);
  bool empty = false;
  __int128 product = 1, last = 0, contiguous = 1;
  for (int i = 0; geometry_ok && i < t.ndim; ++i) {
    geometry_ok = shape[i] >= 0 && (product *= shape[i] > 0 ? shape[i] : 1) <= kLimit;
    empty |= shape[i] == 0;
  }
  for (int i = t.ndim - 1; geometry_ok && !empty && i >= 0; --i) {
    const __int128 stride = shape[i] == 1 ? 0 : (strides ? strides[i] : contiguous);
    last += static_cast<__int128>(shape[i] - 1) * stride;
    contiguous *= shape[i];
    geometry_ok = stride >= 0 && last < kLimit;
  }
  const int esize = std::max(1, t.dtype.bits / 8);
  const __int128 bytes = empty || !geometry_ok ? 0 : (last + 1) * esize;
  geometry_ok = geometry_ok && bytes <= kLimit && (empty || product * esize <= kLimit);
  const bool backed = geometry_ok && t.byte_offset < 4096 && bytes + t.byte_offset <= kMaxBytes;
  const std::int64_t size = backed ? static_cast<std::int64_t>(bytes + t.byte_offset) : 16;
  std::unique_ptr<unsigned char[]> buffer(new unsigned char[size > 0 ? size : 1]);
  std::memset(buffer.get(), 0x3C, size > 0 ? size : 1);
  t.data = in.below(32) == 31 ? nullptr : buffer.get();

  Tensor view;
  try {
    view = python::tensor_from_dltensor(t, "fuzz_op", "x", writable, read_only);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) finding("dlpack internal error", e.what());
    if (std::string_view(e.what()).find("fuzz_op: argument 'x'") == std::string_view::npos) {
      finding("dlpack error without operator and argument", e.what());
    }
    return;
  }
  if (writable && read_only) finding("read-only memory accepted as writable", view.describe());
  if (!geometry_ok) finding("dlpack accepted a geometry beyond int64", view.describe());
  if (view.numel() == 0 || !backed) return;  // a far byte_offset is the producer's promise
  const auto begin = reinterpret_cast<std::uintptr_t>(view.data());
  const auto base = reinterpret_cast<std::uintptr_t>(buffer.get());
  const std::int64_t span = span_bytes(view.shape(), view.strides(), view.dtype());
  if (begin < base || span < 0 || begin - base > static_cast<std::uint64_t>(size) ||
      static_cast<std::uint64_t>(span) > size - (begin - base)) {
    finding("dlpack view outside the tensor's memory", view.describe());
  }
  unsigned sum = 0;
  // Every element of small views; the first and last of views that broadcast over many.
  const std::int64_t count = view.numel();
  for (std::int64_t i = 0; i < count && i < (1 << 16); ++i) sum += *element_address(view, i);
  sum += *element_address(view, count - 1);
  if (sum == 0xFFFFFFFFu) std::abort();  // keeps the reads
}

}  // namespace
}  // namespace tileops::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tileops::fuzz::FuzzInput in(data, size);
  tileops::fuzz::run(in);
  return 0;
}
