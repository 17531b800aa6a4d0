#include "fuzz/fuzz_tensors.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "tileops/core/float16.h"

namespace tileops::fuzz {
namespace {

constexpr std::int64_t kHostile[] = {std::int64_t{1} << 31,
                                     (std::int64_t{1} << 31) - 1,
                                     std::int64_t{1} << 32,
                                     (std::int64_t{1} << 32) + 1,
                                     std::int64_t{1} << 40,
                                     std::int64_t{1} << 60,
                                     std::int64_t{1} << 62,
                                     std::int64_t{3} << 61,
                                     std::numeric_limits<std::int64_t>::max(),
                                     std::numeric_limits<std::int64_t>::min(),
                                     -1,
                                     -2,
                                     65536,
                                     4096,
                                     1 << 20,
                                     255};

std::int64_t hostile(FuzzInput& in) { return kHostile[in.below(std::size(kHostile))]; }

// Writes a small integer `v` as one element of `dtype` at `p`.
void store_small(unsigned char* p, DataType dtype, std::int64_t v) {
  const auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (dtype) {
    case DataType::kBool:
      return put(static_cast<std::uint8_t>(v & 1));
    case DataType::kInt8:
      return put(static_cast<std::int8_t>(v));
    case DataType::kUInt8:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8:
      return put(static_cast<std::uint8_t>(v));
    case DataType::kInt16:
      return put(static_cast<std::int16_t>(v));
    case DataType::kInt32:
      return put(static_cast<std::int32_t>(v));
    case DataType::kInt64:
      return put(v);
    case DataType::kFloat16:
      return put(float_to_float16(static_cast<float>(v)));
    case DataType::kBFloat16:
      return put(float_to_bfloat16(static_cast<float>(v)));
    case DataType::kFloat32:
      return put(static_cast<float>(v));
    case DataType::kFloat64:
      return put(static_cast<double>(v));
  }
}

}  // namespace

void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

std::int64_t fuzz_extent(FuzzInput& in) {
  const std::uint8_t b = in.byte();
  if (b < 160) return b % 18;
  if (b < 240) return b % 64;
  return hostile(in);
}

std::int64_t fuzz_stride(FuzzInput& in) {
  const std::uint8_t b = in.byte();
  if (b < 200) return b % 40;
  return hostile(in);
}

DataType fuzz_dtype(FuzzInput& in, DataType usual) {
  const std::uint8_t b = in.byte();
  if (b < 224) return usual;
  return static_cast<DataType>(b % kNumDataTypes);
}

Dims mutate_shape(FuzzInput& in, Dims shape) {
  const std::uint8_t b = in.byte();
  if (b < 200) return shape;
  const int what = b % 4;
  if (what == 0 && shape.size() < kMaxRank) {
    shape.insert(in.below(shape.size() + 1), fuzz_extent(in));
  } else if (what == 1 && shape.size() > 0) {
    shape.erase(in.below(shape.size()));
  } else if (shape.size() > 0) {
    shape[in.below(shape.size())] = what == 2 ? 1 : fuzz_extent(in);
  }
  return shape;
}

Dims fuzz_strides(FuzzInput& in, const Dims& shape) {
  const int rank = shape.size();
  Dims strides;
  strides.resize(rank);
  const int mode = in.below(8);
  if (mode == 7) {
    for (int i = 0; i < rank; ++i) strides[i] = fuzz_stride(in);
    return strides;
  }
  const std::uint64_t pad = mode == 4 ? 1 + in.below(3) : 0;
  std::uint64_t step = 1;
  for (int k = 0; k < rank; ++k) {
    const int i = mode == 5 ? k : rank - 1 - k;  // column-major or row-major
    strides[i] = static_cast<std::int64_t>(step);
    step *= static_cast<std::uint64_t>(shape[i]) + pad;
  }
  if (mode == 6 && rank > 0) strides[in.below(rank)] = 0;
  return strides;
}

std::int64_t span_bytes(const Dims& shape, const Dims& strides, DataType dtype) {
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
  }
  __int128 last = 0;
  for (int i = 0; i < shape.size(); ++i) {
    last += static_cast<__int128>(shape[i] - 1) * strides[i];
    if (last > std::numeric_limits<std::int64_t>::max()) return -1;  // stays within 128 bits
  }
  const __int128 bytes = (last + 1) * static_cast<__int128>(size_of(dtype));
  return bytes > std::numeric_limits<std::int64_t>::max() ? -1 : static_cast<std::int64_t>(bytes);
}

std::optional<Tensor> Arena::input(const Dims& shape, DataType dtype) {
  return make(mutate_shape(in_, shape), fuzz_dtype(in_, dtype), false);
}

std::optional<Tensor> Arena::output(const Dims& shape, DataType dtype) {
  return make(mutate_shape(in_, shape), fuzz_dtype(in_, dtype), true);
}

std::optional<Tensor> Arena::make(const Dims& shape, DataType dtype, bool output) {
  const Dims strides = fuzz_strides(in_, shape);
  const int placement = in_.below(32);
  Tensor probe;
  try {
    probe = Tensor(nullptr, shape, strides, dtype);
  } catch (const Error&) {
    return std::nullopt;  // refused geometry: handled
  }
  const std::int64_t bytes = span_bytes(shape, strides, dtype);
  if (bytes < 0) finding("Tensor accepted a view whose byte span overflows", probe.describe());
  if (bytes > kMaxBytes) return std::nullopt;
  if (placement == 31 && probe.numel() > 0) {
    // A null data pointer on a non-empty view: each operator must refuse it.
    buffers_.push_back({nullptr, 0, output, probe, {}});
    return probe;
  }
  if (placement == 30 && output) {
    // An output placed inside an earlier buffer: overlap checks, crash-freedom only.
    for (Buffer& b : buffers_) {
      if (b.bytes != nullptr && b.size >= bytes && bytes > 0) {
        const auto elements = (b.size - bytes) / static_cast<std::int64_t>(size_of(dtype));
        const std::int64_t at = elements == 0 ? 0 : (in_.byte() % (elements + 1)) * size_of(dtype);
        Tensor t(b.bytes.get() + at, shape, strides, dtype);
        b.output = true;
        b.before.clear();
        b.size = -b.size;  // aliased: not checked
        aliased_ = true;
        return t;
      }
    }
  }
  Buffer b;
  b.bytes.reset(new unsigned char[bytes > 0 ? bytes : 1]);
  b.size = bytes;
  b.output = output;
  b.view = Tensor(b.bytes.get(), shape, strides, dtype);
  fill(b, dtype);
  buffers_.push_back(std::move(b));
  return buffers_.back().view;
}

void Arena::fill(Buffer& b, DataType dtype) {
  const int mode = in_.below(4);
  const std::int64_t esize = static_cast<std::int64_t>(size_of(dtype));
  if (mode == 0 || b.output) {
    std::memset(b.bytes.get(), b.output ? 0xA5 : 0, b.size);
  } else if (mode == 1 || mode == 2) {
    const std::int64_t step = mode == 1 ? 1 : in_.below(9) - 4;
    for (std::int64_t i = 0; i + esize <= b.size; i += esize) {
      store_small(b.bytes.get() + i, dtype, (i / esize) * step % 97);
    }
  } else {
    const std::uint8_t seed = in_.byte();
    for (std::int64_t i = 0; i < b.size; ++i) {
      b.bytes[i] = static_cast<unsigned char>(seed * 131 + i * 29 + (i >> 7));
    }
  }
}

Tensor Arena::int32_values(const std::vector<std::int32_t>& values, const Dims& shape) {
  Buffer b;
  b.size = static_cast<std::int64_t>(values.size() * sizeof(std::int32_t));
  b.bytes.reset(new unsigned char[b.size > 0 ? b.size : 1]);
  if (b.size > 0) std::memcpy(b.bytes.get(), values.data(), b.size);
  b.view = Tensor(b.bytes.get(), shape, DataType::kInt32);
  buffers_.push_back(std::move(b));
  return buffers_.back().view;
}

void Arena::seal() {
  for (Buffer& b : buffers_) {
    if (b.size > 0) b.before.assign(b.bytes.get(), b.bytes.get() + b.size);
  }
}

void Arena::check_error(const Error& e) const {
  if (e.kind() == ErrorKind::kInternal) finding("internal error on user input", e.what());
  for (const Buffer& b : buffers_) {
    if (b.size > 0 && !b.output && std::memcmp(b.before.data(), b.bytes.get(), b.size) != 0) {
      finding("an input was written before an error", e.what());
    }
  }
}

void Arena::check_run() const {
  for (const Buffer& b : buffers_) {
    if (b.size <= 0) continue;
    std::vector<bool> element_byte(b.output ? b.size : 0, false);
    if (b.output) {
      const std::int64_t esize = static_cast<std::int64_t>(b.view.element_size());
      for (std::int64_t i = 0; i < b.view.numel(); ++i) {
        const std::int64_t at = element_address(b.view, i) - b.bytes.get();
        for (std::int64_t k = 0; k < esize; ++k) element_byte[at + k] = true;
      }
    }
    for (std::int64_t i = 0; i < b.size; ++i) {
      if (b.bytes[i] != b.before[i] && !(b.output && element_byte[i])) {
        finding(b.output ? "a byte outside an output's view was written" : "an input was written",
                b.view.describe() + " byte " + std::to_string(i));
      }
    }
  }
}

bool Arena::self_overlapping(const Tensor& t) {
  const std::int64_t bytes = span_bytes(t.shape(), t.strides(), t.dtype());
  std::vector<bool> seen(bytes > 0 ? bytes : 0, false);
  const auto* base = static_cast<const unsigned char*>(t.data());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const std::int64_t at = element_address(t, i) - base;
    if (seen[at]) return true;
    seen[at] = true;
  }
  return false;
}

const unsigned char* element_address(const Tensor& t, std::int64_t index) {
  std::int64_t offset = 0;
  for (int d = t.rank() - 1; d >= 0; --d) {
    offset += (index % t.shape()[d]) * t.strides()[d];
    index /= t.shape()[d];
  }
  return static_cast<const unsigned char*>(t.data()) +
         offset * static_cast<std::int64_t>(t.element_size());
}

double element_as_double(const Tensor& t, std::int64_t index) {
  const unsigned char* p = element_address(t, index);
  const auto get = [p](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return static_cast<double>(x);
  };
  switch (t.dtype()) {
    case DataType::kInt32:
      return get(std::int32_t{});
    case DataType::kInt64:
      return get(std::int64_t{});
    case DataType::kFloat32:
      return get(float{});
    case DataType::kFloat64:
      return get(double{});
    case DataType::kFloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, p, 2);
      return float16_to_float(bits);
    }
    case DataType::kBFloat16: {
      std::uint16_t bits = 0;
      std::memcpy(&bits, p, 2);
      return bfloat16_to_float(bits);
    }
    default:
      return get(std::uint8_t{});
  }
}

}  // namespace tileops::fuzz
