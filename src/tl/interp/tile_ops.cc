// Interpreter: reductions, scans, data movement within tiles and matmul. Sums and products
// accumulate in double (integers in int64), so 16-bit inputs are never accumulated in 16 bits.
#include <algorithm>
#include <cmath>
#include <limits>

#include "src/tl/interp/eval.h"

namespace tileops::tl::interp {
namespace {

// Row-major index into `out` (the reduced shape, dims kept or dropped) of every input element.
std::vector<std::size_t> reduce_map(const std::vector<std::int64_t>& shape,
                                    const std::vector<bool>& reduced) {
  std::vector<std::int64_t> kept;
  for (std::size_t d = 0; d < shape.size(); ++d) kept.push_back(reduced[d] ? 1 : shape[d]);
  const std::vector<std::int64_t> ks = row_major_strides(kept);
  std::vector<std::int64_t> strides(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) strides[d] = reduced[d] ? 0 : ks[d];
  std::size_t n = 1;
  for (std::int64_t e : shape) n *= static_cast<std::size_t>(e);
  std::vector<std::size_t> map(n);
  std::vector<std::int64_t> index(shape.size(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) o += index[d] * strides[d];
    map[k] = static_cast<std::size_t>(o);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return map;
}

}  // namespace

void eval_reduce(ReduceOp op, const Buffer& x, const std::vector<std::int64_t>& dims, Buffer& out) {
  const std::size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, dims.empty());
  for (std::int64_t d : dims) reduced[d < 0 ? d + static_cast<std::int64_t>(rank) : d] = true;
  const std::vector<std::size_t> map = reduce_map(x.shape, reduced);
  // Position of each element along the reduced dims (argmax/argmin over one dim).
  const std::size_t n_out = out.size();
  std::int64_t count = 1;
  for (std::size_t d = 0; d < rank; ++d) count *= reduced[d] ? x.shape[d] : 1;
  std::vector<double> acc(n_out);
  std::vector<std::int64_t> iacc(n_out);
  std::vector<std::int64_t> arg(n_out, -1);
  const bool is_float = x.floating();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t o = 0; o < n_out; ++o) {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
      case ReduceOp::kAny:
        acc[o] = 0;
        iacc[o] = 0;
        break;
      case ReduceOp::kProd:
      case ReduceOp::kAll:
        acc[o] = 1;
        iacc[o] = 1;
        break;
      case ReduceOp::kMax:
      case ReduceOp::kArgmax:
        acc[o] = -inf;
        iacc[o] = std::numeric_limits<std::int64_t>::min();
        break;
      case ReduceOp::kMin:
      case ReduceOp::kArgmin:
        acc[o] = inf;
        iacc[o] = std::numeric_limits<std::int64_t>::max();
        break;
    }
  }
  std::vector<std::int64_t> seen(n_out, 0);  // position along the reduced dims
  for (std::size_t k = 0; k < map.size(); ++k) {
    const std::size_t o = map[k];
    const std::int64_t pos = seen[o]++;
    const double v = is_float ? x.f[k] : 0;
    const std::int64_t iv = is_float ? 0 : x.i[k];
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        if (is_float)
          acc[o] += v;
        else
          iacc[o] = static_cast<std::int64_t>(static_cast<std::uint64_t>(iacc[o]) +
                                              static_cast<std::uint64_t>(iv));
        break;
      case ReduceOp::kProd:
        if (is_float)
          acc[o] *= v;
        else
          iacc[o] = static_cast<std::int64_t>(static_cast<std::uint64_t>(iacc[o]) *
                                              static_cast<std::uint64_t>(iv));
        break;
      case ReduceOp::kMax:
      case ReduceOp::kMin: {
        const bool better_max = op == ReduceOp::kMax;
        if (is_float) {
          if (std::isnan(v) || std::isnan(acc[o]))
            acc[o] = NAN;
          else
            acc[o] = better_max ? std::max(acc[o], v) : std::min(acc[o], v);
        } else {
          iacc[o] = better_max ? std::max(iacc[o], iv) : std::min(iacc[o], iv);
        }
        break;
      }
      case ReduceOp::kArgmax:
      case ReduceOp::kArgmin: {
        const double value = is_float ? v : static_cast<double>(iv);
        const bool nan_seen = arg[o] >= 0 && std::isnan(acc[o]);
        const bool better = op == ReduceOp::kArgmax ? value > acc[o] : value < acc[o];
        if (!nan_seen && (arg[o] < 0 || better || std::isnan(value))) {
          acc[o] = value;
          arg[o] = pos;
        }
        break;
      }
      case ReduceOp::kAll:
        iacc[o] = iacc[o] && iv != 0;
        break;
      case ReduceOp::kAny:
        iacc[o] = iacc[o] || iv != 0;
        break;
    }
  }
  for (std::size_t o = 0; o < n_out; ++o) {
    if (op == ReduceOp::kArgmax || op == ReduceOp::kArgmin) {
      out.set_int(o, arg[o]);
    } else if (op == ReduceOp::kMean) {
      out.set(o, acc[o] / static_cast<double>(count));
    } else if (is_float) {
      out.set(o, acc[o]);
    } else {
      out.set_int(o, iacc[o]);
    }
  }
}

void eval_cumsum(const Buffer& x, int axis, Buffer& out) {
  const std::vector<std::int64_t> strides = row_major_strides(x.shape);
  const std::int64_t extent = x.shape[axis];
  const std::int64_t stride = strides[axis];
  for (std::size_t k = 0; k < x.size(); ++k) {
    const std::int64_t pos = (static_cast<std::int64_t>(k) / stride) % extent;
    if (pos != 0) continue;  // start of a line along `axis`
    double acc = 0;
    std::int64_t iacc = 0;
    for (std::int64_t j = 0; j < extent; ++j) {
      const std::size_t e = k + static_cast<std::size_t>(j * stride);
      if (x.floating()) {
        acc += x.f[e];
        out.set(e, acc);
      } else {
        iacc = static_cast<std::int64_t>(static_cast<std::uint64_t>(iacc) +
                                         static_cast<std::uint64_t>(x.i[e]));
        out.set_int(e, iacc);
      }
    }
  }
}

// A comparison sort (the cpu backend radix-sorts keys instead): the two agree on every order.
void eval_sort(const Buffer& x, const SortAttrs& sort, Buffer& out) {
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  const std::int64_t axis = sort.axis < 0 ? sort.axis + rank : sort.axis;
  const std::int64_t extent = x.shape[static_cast<std::size_t>(axis)];
  const std::int64_t inner = row_major_strides(x.shape)[static_cast<std::size_t>(axis)];
  const std::int64_t outer = static_cast<std::int64_t>(x.size()) / (extent * inner);
  // Ascending order: NaN above everything, -0.0 == 0.0 (a plain < on doubles).
  auto below = [&](std::size_t a, std::size_t b) {
    if (!x.floating()) return x.i[a] < x.i[b];
    return std::isnan(x.f[b]) ? !std::isnan(x.f[a]) : x.f[a] < x.f[b];
  };
  std::vector<std::int64_t> line(static_cast<std::size_t>(extent));
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto element = [&](std::int64_t j) {
        return static_cast<std::size_t>((o * extent + j) * inner + i);
      };
      for (std::int64_t j = 0; j < extent; ++j) line[static_cast<std::size_t>(j)] = j;
      std::stable_sort(line.begin(), line.end(), [&](std::int64_t a, std::int64_t b) {
        return sort.descending ? below(element(b), element(a)) : below(element(a), element(b));
      });
      for (std::int64_t j = 0; j < sort.k; ++j) {
        const std::int64_t from = line[static_cast<std::size_t>(j)];
        const auto to = static_cast<std::size_t>((o * sort.k + j) * inner + i);
        if (sort.indices) {
          out.set_int(to, from);
        } else if (x.floating()) {
          out.f[to] = x.f[element(from)];
        } else {
          out.i[to] = x.i[element(from)];
        }
      }
    }
  }
}

void eval_broadcast(const Buffer& x, Buffer& out) {
  const auto map = broadcast_map(x.shape, out.shape);
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out.floating())
      out.f[k] = x.f[map[k]];
    else
      out.i[k] = x.i[map[k]];
  }
}

void eval_transpose(const Buffer& x, const std::vector<std::int64_t>& perm, Buffer& out) {
  const std::vector<std::int64_t> in_strides = row_major_strides(x.shape);
  const std::size_t rank = out.shape.size();
  std::vector<std::int64_t> index(rank, 0);
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t p = perm[d] < 0 ? perm[d] + static_cast<std::int64_t>(rank) : perm[d];
      src += index[d] * in_strides[p];
    }
    if (out.floating())
      out.f[k] = x.f[src];
    else
      out.i[k] = x.i[src];
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d]) break;
      index[d] = 0;
    }
  }
}

void eval_slice(const Buffer& x, const std::vector<std::int64_t>& offsets, Buffer& out) {
  const std::vector<std::int64_t> in_strides = row_major_strides(x.shape);
  const std::size_t rank = out.shape.size();
  std::vector<std::int64_t> index(rank, 0);
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank; ++d) src += (offsets[d] + index[d]) * in_strides[d];
    if (out.floating())
      out.f[k] = x.f[src];
    else
      out.i[k] = x.i[src];
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d]) break;
      index[d] = 0;
    }
  }
}

void eval_concat(const std::vector<const Buffer*>& xs, int axis, Buffer& out) {
  const std::vector<std::int64_t> out_strides = row_major_strides(out.shape);
  std::int64_t base = 0;
  for (const Buffer* x : xs) {
    const std::size_t rank = x->shape.size();
    std::vector<std::int64_t> index(rank, 0);
    for (std::size_t k = 0; k < x->size(); ++k) {
      std::int64_t dst = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        dst += (index[d] + (static_cast<int>(d) == axis ? base : 0)) * out_strides[d];
      }
      if (out.floating())
        out.f[dst] = x->f[k];
      else
        out.i[dst] = x->i[k];
      for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
        if (++index[d] < x->shape[d]) break;
        index[d] = 0;
      }
    }
    base += x->shape[axis];
  }
}

void eval_matmul(const Buffer& a, const Buffer& b, const Buffer* c, bool acc, Buffer& out) {
  const std::int64_t m = a.shape[0];
  const std::int64_t k = a.shape[1];
  const std::int64_t n = b.shape[1];
  const std::vector<std::size_t> cmap =
      c != nullptr ? broadcast_map(c->shape, out.shape) : std::vector<std::size_t>();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) sum += a.f[i * k + p] * b.f[p * n + j];
      const std::size_t o = static_cast<std::size_t>(i * n + j);
      if (c != nullptr) sum += c->f[cmap[o]];
      out.set(o, sum);
    }
  }
  (void)acc;
}

}  // namespace tileops::tl::interp
