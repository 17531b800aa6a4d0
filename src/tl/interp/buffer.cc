// Element storage and conversions of the interpreter (buffer.h).
#include "src/tl/interp/buffer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/core/scalar.h"

namespace tileops::tl::interp {
namespace {

// The finite values of an 8-bit float format, ascending, one zero. HiF8's codes are not ordered by
// magnitude, so a neighbour by value is looked up here rather than found by stepping the code.
std::vector<double> finite_grid(DataType d) {
  std::vector<double> grid;
  for (unsigned code = 0; code < 256; ++code) {
    const auto bits = static_cast<std::uint8_t>(code);
    const double v = read_as_double(&bits, d);
    if (std::isfinite(v)) grid.push_back(v == 0 ? 0.0 : v);
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  return grid;
}

const std::vector<double>& grid8(DataType d) {
  static const std::vector<double> e4m3fn = finite_grid(DataType::kFloat8E4M3FN);
  static const std::vector<double> e5m2 = finite_grid(DataType::kFloat8E5M2);
  static const std::vector<double> hif8 = finite_grid(DataType::kHiFloat8);
  return d == DataType::kFloat8E4M3FN ? e4m3fn : (d == DataType::kFloat8E5M2 ? e5m2 : hif8);
}

// The representable neighbour of `r` (a value of float dtype `d`, or +-inf) by value, toward
// +inf (up) or -inf; +-inf past the largest finite value, whether or not `d` has infinities.
double step(DataType d, double r, bool up) {
  if (d == DataType::kFloat64) return std::nextafter(r, up ? HUGE_VAL : -HUGE_VAL);
  if (d == DataType::kFloat32) {
    return std::nextafter(static_cast<float>(r), up ? HUGE_VALF : -HUGE_VALF);
  }
  if (size_of(d) == 1) {
    const std::vector<double>& g = grid8(d);
    if (up) {
      const auto it = std::upper_bound(g.begin(), g.end(), r);
      return it == g.end() ? HUGE_VAL : *it;
    }
    const auto it = std::lower_bound(g.begin(), g.end(), r);
    return it == g.begin() ? -HUGE_VAL : *(it - 1);
  }
  // float16, bfloat16: IEEE sign-magnitude patterns, one ulp = one step of the magnitude.
  std::uint16_t bits = 0;
  write_from_double(r, &bits, d);
  const bool negative = (bits & 0x8000) != 0;
  const std::uint16_t magnitude = bits & 0x7FFF;
  if (magnitude == 0) {
    bits = up ? 1 : 0x8001;
  } else if (up != negative) {
    ++bits;  // away from zero
  } else {
    --bits;
  }
  return read_as_double(&bits, d);
}

// Where round-to-nearest places `x` for distances: x itself when finite; for +-inf, the value one
// gap past the largest finite one (IEEE rounds to inf from max + gap / 2 on).
double position(DataType d, double x) {
  if (std::isfinite(x)) return x;
  const double max = step(d, x, x < 0);
  return max + (max - step(d, max, x < 0));
}

double round_integral(double v, RoundMode mode) {
  switch (mode) {
    case RoundMode::kRint:
      return std::nearbyint(v);
    case RoundMode::kFloor:
      return std::floor(v);
    case RoundMode::kCeil:
      return std::ceil(v);
    case RoundMode::kTrunc:
      return std::trunc(v);
    case RoundMode::kHalfAway:
      return std::round(v);
  }
  return v;
}

}  // namespace

std::int64_t Buffer::get_int(std::size_t k) const {
  if (!floating()) return i[k];
  const double v = f[k];
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<std::int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

void Buffer::set(std::size_t k, double v) {
  if (floating()) {
    f[k] = round_to(dtype, v);
  } else if (dtype == DataType::kBool) {
    i[k] = v != 0 ? 1 : 0;
  } else {
    // Integer results of float math (e.g. means of ints) truncate toward zero, saturating.
    Buffer tmp;
    tmp.dtype = DataType::kFloat64;
    tmp.f = {v};
    i[k] = wrap_to(dtype, tmp.get_int(0));
  }
}

void Buffer::set_int(std::size_t k, std::int64_t v) {
  if (floating()) {
    std::uint64_t bits = 0;
    write_from_int64(v, &bits, dtype);
    f[k] = read_as_double(&bits, dtype);
  } else {
    i[k] = wrap_to(dtype, v);
  }
}

void Buffer::resize(DataType d, std::vector<std::int64_t> s) {
  dtype = d;
  shape = std::move(s);
  const auto n = static_cast<std::size_t>(checked_product(shape, "tl interp: tile"));
  // The verifier bounds a tile's bytes by int64, not by this machine's memory.
  try {
    if (floating()) {
      f.assign(n, 0.0);
      i.clear();
    } else {
      i.assign(n, 0);
      f.clear();
    }
  } catch (const std::exception&) {  // bad_alloc, or length_error beyond max_size()
    throw Error(ErrorKind::kOutOfMemory,
                "tl interp: a tile of " + std::to_string(n) + " elements does not fit in memory");
  }
}

double round_to(DataType dtype, double v) {
  if (dtype == DataType::kFloat64) return v;
  if (dtype == DataType::kFloat32) return static_cast<float>(v);
  std::uint64_t bits = 0;
  write_from_double(v, &bits, dtype);
  return read_as_double(&bits, dtype);
}

std::int64_t wrap_to(DataType dtype, std::int64_t v) {
  switch (dtype) {
    case DataType::kBool:
      return v != 0 ? 1 : 0;
    case DataType::kInt8:
      return static_cast<std::int8_t>(v);
    case DataType::kUInt8:
      return static_cast<std::uint8_t>(v);
    case DataType::kInt16:
      return static_cast<std::int16_t>(v);
    case DataType::kInt32:
      return static_cast<std::int32_t>(v);
    default:
      return v;
  }
}

void bitcast_element(const Buffer& from, std::size_t k, Buffer& to, std::size_t j) {
  std::uint64_t bits = 0;
  switch (from.dtype) {
    case DataType::kFloat64:
      std::memcpy(&bits, &from.f[k], 8);
      break;
    case DataType::kFloat32: {
      const auto v = static_cast<float>(from.f[k]);
      std::uint32_t b = 0;
      std::memcpy(&b, &v, 4);
      bits = b;
      break;
    }
    case DataType::kFloat16:
      bits = float_to_float16(static_cast<float>(from.f[k]));
      break;
    case DataType::kBFloat16:
      bits = float_to_bfloat16(static_cast<float>(from.f[k]));
      break;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8: {  // the byte code of a value already on the format's grid
      std::uint8_t b = 0;
      write_from_double(from.f[k], &b, from.dtype);
      bits = b;
      break;
    }
    default:  // integers: two's complement, the low bytes
      bits = static_cast<std::uint64_t>(from.i[k]);
      break;
  }
  switch (to.dtype) {
    case DataType::kFloat64:
      std::memcpy(&to.f[j], &bits, 8);
      break;
    case DataType::kFloat32: {
      const auto b = static_cast<std::uint32_t>(bits);
      float v = 0;
      std::memcpy(&v, &b, 4);
      to.f[j] = v;
      break;
    }
    case DataType::kFloat16:
      to.f[j] = float16_to_float(static_cast<std::uint16_t>(bits));
      break;
    case DataType::kBFloat16:
      to.f[j] = bfloat16_to_float(static_cast<std::uint16_t>(bits));
      break;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8: {
      const auto b = static_cast<std::uint8_t>(bits);
      to.f[j] = read_as_double(&b, to.dtype);
      break;
    }
    default:
      to.i[j] = wrap_to(to.dtype, static_cast<std::int64_t>(bits));
      break;
  }
}

void cast_element(const Buffer& from, std::size_t k, Buffer& to, std::size_t j, RoundMode mode) {
  if (!from.floating()) {
    const std::int64_t v = from.i[k];
    if (to.floating()) {
      to.set_int(j, v);
    } else {
      to.i[j] = wrap_to(to.dtype, v);
    }
    return;
  }
  const double v = from.f[k];
  if (to.dtype == DataType::kBool) {
    to.i[j] = v != 0 ? 1 : 0;
  } else if (!to.floating()) {
    // Round, then saturate to the target's range (NaN gives 0).
    const double r = round_integral(v, mode);
    Buffer wide;
    wide.dtype = DataType::kFloat64;
    wide.f = {r};
    const std::int64_t n = wide.get_int(0);
    // -2^(bits - 1), negated as unsigned: -(2^63) overflows int64.
    const std::int64_t lo =
        to.dtype == DataType::kUInt8
            ? 0
            : static_cast<std::int64_t>(0 - (std::uint64_t{1} << (8 * size_of(to.dtype) - 1)));
    const std::int64_t hi = to.dtype == DataType::kUInt8 ? 255 : -(lo + 1);
    to.i[j] = to.dtype == DataType::kInt64 ? n : std::min(std::max(n, lo), hi);
  } else {
    const double r = round_to(to.dtype, v);
    // HiF8 rounds ties away from zero already (its own rule), so round_half_away is its rint.
    const bool nearest = mode == RoundMode::kRint ||
                         (mode == RoundMode::kHalfAway && to.dtype == DataType::kHiFloat8);
    if (nearest || r == v || std::isnan(v) || std::isinf(v)) {
      to.f[j] = r;
      return;
    }
    // The representable values on either side of v, by value (+-inf past the range).
    const double lo = r < v ? r : step(to.dtype, r, false);
    const double hi = r > v ? r : step(to.dtype, r, true);
    double out = r;
    switch (mode) {
      case RoundMode::kFloor:
        out = lo;
        break;
      case RoundMode::kCeil:
        out = hi;
        break;
      case RoundMode::kTrunc:
        out = v > 0 ? lo : hi;
        break;
      case RoundMode::kHalfAway: {  // rint, except that a tie goes away from zero
        const double dl = v - position(to.dtype, lo);
        const double dh = position(to.dtype, hi) - v;
        if (dl == dh) out = v > 0 ? hi : lo;
        break;
      }
      case RoundMode::kRint:
        break;
    }
    // A zero result keeps v's sign (IEEE; HiF8 has one zero), +-inf is stored as the format
    // stores it (float8_e4m3fn, without infinities, saturates).
    to.f[j] = round_to(to.dtype, out == 0 ? std::copysign(0.0, v) : out);
  }
}

bool tensor_geometry_ok(const TensorView& t) {
  for (std::int64_t e : t.shape) {
    if (e == 0) return true;
  }
  const auto es = static_cast<std::int64_t>(size_of(t.dtype));
  std::int64_t bytes = es, below = 0, above = es;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    std::int64_t span = 0;
    std::int64_t& side = t.strides[i] < 0 ? below : above;
    if (__builtin_mul_overflow(bytes, t.shape[i], &bytes) ||
        __builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &span) ||
        __builtin_mul_overflow(span, es, &span) || __builtin_add_overflow(side, span, &side))
      return false;
  }
  return true;
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  // Wrapping: an overflowing product fails tensor_geometry_ok.
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) {
    s[d] = static_cast<std::int64_t>(static_cast<std::uint64_t>(s[d + 1]) *
                                     static_cast<std::uint64_t>(shape[d + 1]));
  }
  return s;
}

}  // namespace tileops::tl::interp
