#include "tests/support/test_tensors.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "tileops/core/scalar.h"

namespace tileops::testing {
namespace {

// Calls fn(row-major index, element pointer) for every element of t.
template <typename Fn>
void for_each_element(const Tensor& t, Fn&& fn) {
  const std::int64_t n = t.numel();
  if (n == 0) return;
  std::vector<std::int64_t> index(static_cast<std::size_t>(t.rank()), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    fn(i, t.element_ptr(index.data()));
    for (int d = t.rank() - 1; d >= 0; --d) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

Dims padded_strides(const Dims& shape) {
  Dims strides;
  strides.resize(shape.size());
  std::int64_t stride = 2;
  for (int i = shape.size() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride = stride * std::max<std::int64_t>(shape[i], 1) + 3;
  }
  return strides;
}

TensorStorage poisoned(const Dims& shape, DataType dtype, Layout layout) {
  TensorStorage storage = layout == Layout::kContiguous
                              ? TensorStorage(shape, dtype)
                              : TensorStorage(shape, padded_strides(shape), dtype);
  storage.fill_bytes(0xFF);
  return storage;
}

TensorStorage random_tensor(const Dims& shape, DataType dtype, std::mt19937_64& rng, Layout layout,
                            double lo, double hi) {
  TensorStorage storage = poisoned(shape, dtype, layout);
  std::uniform_real_distribution<double> real(lo, hi);
  for_each_element(storage.view(), [&](std::int64_t, void* p) {
    if (is_floating(dtype)) {
      write_from_double(real(rng), p, dtype);
    } else {
      write_from_double(std::floor(real(rng)), p, dtype);
    }
  });
  return storage;
}

TensorStorage random_nonfinite_tensor(const Dims& shape, DataType dtype, std::mt19937_64& rng,
                                      Layout layout, int every) {
  TensorStorage storage = random_tensor(shape, dtype, rng, layout);
  const double specials[] = {
      std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
      std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  std::vector<double> values = to_doubles(storage.view());
  std::uniform_int_distribution<int> pick(0, every - 1);
  for (std::size_t i = 0; i < values.size(); ++i) {
    // The first four elements get one special each, the others one in `every`.
    if (i < 4 || pick(rng) == 0) values[i] = specials[i < 4 ? i : i % 4];
  }
  from_doubles(storage.view(), values);
  return storage;
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> values(static_cast<std::size_t>(t.numel()));
  for_each_element(t, [&](std::int64_t i, void* p) {
    values[static_cast<std::size_t>(i)] = read_as_double(p, t.dtype());
  });
  return values;
}

std::vector<std::uint64_t> element_bits(const Tensor& t) {
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(t.numel()), 0);
  for_each_element(t, [&](std::int64_t i, void* p) {
    std::memcpy(&bits[static_cast<std::size_t>(i)], p, t.element_size());
  });
  return bits;
}

void from_doubles(const Tensor& t, const std::vector<double>& values) {
  for_each_element(t, [&](std::int64_t i, void* p) {
    write_from_double(values.at(static_cast<std::size_t>(i)), p, t.dtype());
  });
}

std::vector<unsigned char> snapshot(const TensorStorage& storage) {
  std::vector<unsigned char> bytes(storage.bytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), storage.data(), bytes.size());
  return bytes;
}

Tolerance dot_tolerance(DataType dtype, std::int64_t k) {
  Tolerance tol = tolerance_for(dtype);
  tol.atol += 4e-7 * static_cast<double>(k);
  return tol;
}

Tolerance tolerance_for(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return {1e-5, 1e-5};
    case DataType::kFloat16:
      return {2e-3, 2e-3};  // 2^-11 rounding of the result plus float32 accumulation
    case DataType::kBFloat16:
      return {1.6e-2, 1.6e-2};  // 2^-8 rounding of the result plus float32 accumulation
    default:
      return {0.0, 0.0};
  }
}

std::string compare(const Tensor& actual, const std::vector<double>& expected, Tolerance tol) {
  const std::vector<double> got = to_doubles(actual);
  if (got.size() != expected.size()) {
    return "size mismatch: got " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(expected.size());
  }
  std::size_t bad = 0;
  std::size_t worst = 0;
  double worst_excess = -1.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = expected[i];
    const double a = got[i];
    bool ok;
    double excess = 0.0;
    if (std::isnan(e)) {
      ok = std::isnan(a);
    } else if (std::isinf(e)) {
      ok = a == e;
    } else {
      const double err = std::fabs(a - e);
      excess = err - (tol.atol + tol.rtol * std::fabs(e));
      ok = !std::isnan(a) && excess <= 0.0;
      if (std::isnan(a)) excess = INFINITY;
    }
    if (!ok) {
      ++bad;
      if (excess > worst_excess || worst_excess < 0) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return {};
  std::ostringstream os;
  os << bad << " of " << got.size() << " elements out of tolerance (atol " << tol.atol << ", rtol "
     << tol.rtol << "); worst at row-major index " << worst << ": got " << got[worst]
     << ", expected " << expected[worst];
  return os.str();
}

double max_abs_error(const Tensor& actual, const std::vector<double>& expected) {
  const std::vector<double> got = to_doubles(actual);
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    if (std::isfinite(expected[i])) worst = std::max(worst, std::fabs(got[i] - expected[i]));
    if (std::isnan(got[i]) && !std::isnan(expected[i])) return INFINITY;
  }
  return worst;
}

}  // namespace tileops::testing
