// Two views share a byte iff a0 + sum(sa_i·x_i) + e = b0 + sum(sb_j·y_j) + f within the bounds
// (x_i < na_i, y_j < nb_j, e and f below the element sizes), strides here in bytes. Writing
// y_j = nb_j - 1 - y'_j turns this into one bounded equation with positive coefficients,
//   sum(c_k·z_k) = T,  0 <= z_k <= u_k,
// over the dims of both views and their element bytes (coefficient 1): T is the distance from a's
// first byte to b's last. The search picks z_k for the largest coefficient first, only values
// that leave the rest reachable: in the interval the smaller terms span, and a multiple of their
// gcd. A run of small terms that reaches every multiple of its gcd up to its span (a contiguous
// block: elements of bytes, rows of elements) answers at once, so real layouts take a few steps.
#include "src/ops/framework/memory_overlap.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <numeric>
#include <optional>
#include <utility>

#include "tileops/core/checked_size.h"

namespace tileops::ops {
namespace {

// Where two views lie once their extents meet: their sizes in bytes from first to past the last
// byte touched, and b's first byte relative to a's. bytes_a + bytes_b fits in int64.
struct Placement {
  std::int64_t bytes_a, bytes_b, delta;
};

// Past the last byte the view touches, from its first: 0 when empty, nullopt on overflow.
std::optional<std::int64_t> byte_extent(const ByteView& v) {
  if (v.shape.size() != v.strides.size() || v.element_size < 1) return std::nullopt;
  if (std::find(v.shape.begin(), v.shape.end(), 0) != v.shape.end()) return 0;
  std::int64_t last = 0;
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (v.shape[i] == 1) continue;  // its stride never moves (and may be anything)
    std::int64_t step = 0;
    if (v.shape[i] < 0 || v.strides[i] < 0 ||
        __builtin_mul_overflow(v.shape[i] - 1, v.strides[i], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      return std::nullopt;
    }
  }
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(last, v.element_size, &bytes) ||
      __builtin_add_overflow(bytes, v.element_size, &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

// kApart for an empty view or disjoint extents, kUndecided on overflow; otherwise fills `p`.
std::optional<Overlap> place(const ByteView& a, const ByteView& b, Placement& p) {
  const std::optional<std::int64_t> bytes_a = byte_extent(a), bytes_b = byte_extent(b);
  if (bytes_a == 0 || bytes_b == 0) return Overlap::kApart;
  std::uintptr_t a_end = 0, b_end = 0;
  std::int64_t total = 0;
  if (!bytes_a || !bytes_b || __builtin_add_overflow(a.begin, *bytes_a, &a_end) ||
      __builtin_add_overflow(b.begin, *bytes_b, &b_end)) {
    return Overlap::kUndecided;
  }
  if (!(a.begin < b_end && b.begin < a_end)) return Overlap::kApart;
  if (__builtin_add_overflow(*bytes_a, *bytes_b, &total)) return Overlap::kUndecided;
  // Below bytes_a (or above -bytes_b) since the extents meet.
  const std::int64_t delta = b.begin >= a.begin ? static_cast<std::int64_t>(b.begin - a.begin)
                                                : -static_cast<std::int64_t>(a.begin - b.begin);
  p = {*bytes_a, *bytes_b, delta};
  return std::nullopt;
}

// A view as `rows` runs of `length` contiguous bytes, `stride` bytes apart: a contiguous inner
// block under outer dims that collapse into one uniform stride (q and k sliced out of one fused
// qkv buffer). Nullopt when the view has no such form. Products stay within the view's extent.
struct Rows {
  std::int64_t rows, length, stride;
};

std::optional<Rows> as_rows(const ByteView& v) {
  std::int64_t inner = 1;  // elements of the contiguous inner block
  auto dim = static_cast<std::ptrdiff_t>(v.shape.size()) - 1;
  for (; dim >= 0 && (v.shape[dim] == 1 || v.strides[dim] == inner); --dim) inner *= v.shape[dim];
  std::int64_t rows = 1, stride = 0, next = 0;
  for (; dim >= 0; --dim) {
    if (v.shape[dim] == 1) continue;
    if (v.strides[dim] == 0) return std::nullopt;  // a broadcast dim revisits its bytes
    if (stride != 0 && (__builtin_mul_overflow(stride, rows, &next) || v.strides[dim] != next)) {
      return std::nullopt;
    }
    if (stride == 0) stride = v.strides[dim];
    rows *= v.shape[dim];
  }
  const Rows r{rows, inner * v.element_size, stride * v.element_size};
  if (rows > 1 && r.length > r.stride) return std::nullopt;
  return r;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

// Rows of one common stride: b's row j starts delta + (j - i)·stride bytes after a's row i, and
// they meet when -b.length < delta + t·stride < a.length for some t = j - i in range.
bool rows_intersect(const Rows& a, const Rows& b, std::int64_t stride, std::int64_t delta) {
  const std::int64_t t_low = std::max(floor_div(-b.length - delta, stride) + 1, 1 - a.rows);
  const std::int64_t t_high = std::min(-floor_div(delta - a.length, stride) - 1, b.rows - 1);
  return t_low <= t_high;
}

// The fast paths' answer where they have one.
std::optional<Overlap> by_rows(const ByteView& a, const ByteView& b, std::int64_t delta) {
  const std::optional<Rows> ra = as_rows(a), rb = as_rows(b);
  if (!ra || !rb) return std::nullopt;
  if (ra->rows == 1 && rb->rows == 1) return Overlap::kShared;  // two runs whose extents meet
  const std::int64_t stride = ra->rows == 1 ? rb->stride : ra->stride;
  if ((ra->rows > 1 && ra->stride != stride) || (rb->rows > 1 && rb->stride != stride)) {
    return std::nullopt;
  }
  return rows_intersect(*ra, *rb, stride, delta) ? Overlap::kShared : Overlap::kApart;
}

struct Term {
  std::int64_t coef, bound;  // c_k and u_k
};
constexpr std::size_t kMaxTerms = 2 * (kMaxRank + 1);  // both views' dims and element bytes

// a^-1 modulo m, for gcd(a, m) = 1 (0 when m = 1). Bezout coefficients stay below m.
std::int64_t inverse_mod(std::int64_t a, std::int64_t m) {
  std::int64_t r0 = m, r1 = a % m, s0 = 0, s1 = 1;
  while (r1 != 0) {
    const std::int64_t q = r0 / r1;
    r0 = std::exchange(r1, r0 - q * r1);
    s0 = std::exchange(s1, s0 - q * s1);
  }
  return (s0 % m + m) % m;
}

std::int64_t mul_mod(std::int64_t a, std::int64_t b, std::int64_t m) {
  const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  const auto um = static_cast<std::uint64_t>(m);
  if (um <= std::uint64_t{1} << 32) return static_cast<std::int64_t>(ua * ub % um);
  using Wide = unsigned __int128;  // a, b < m <= 2^63: the product needs up to 126 bits
  return static_cast<std::int64_t>(Wide{ua} * ub % um);
}

class Search {
 public:
  Search(std::span<const Term> terms, std::int64_t max_work) : n_(terms.size()), work_(max_work) {
    // Suffix facts: what terms k.. reach, their gcd, and whether they reach every multiple of
    // it up to their span (each coefficient a multiple of the smaller ones' gcd and at most one
    // gcd past their span). Every sum fits: it is at most the two views' bytes.
    levels_[n_] = {.dense = true};
    for (std::size_t k = n_; k-- > 0;) {
      const Term& t = terms[k];
      Level& l = levels_[k];
      const Level& next = levels_[k + 1];
      l = {.coef = t.coef, .bound = t.bound, .reach = next.reach + t.coef * t.bound};
      l.gcd = std::gcd(t.coef, next.gcd);
      l.dense =
          k + 1 == n_ || (next.dense && t.coef % next.gcd == 0 && t.coef - next.gcd <= next.reach);
      if (!l.dense) {  // c·z = target (mod g) has the solutions z = (target/d)·inverse (mod m)
        l.modulus = next.gcd / l.gcd;
        l.inverse = inverse_mod((t.coef / l.gcd) % l.modulus, l.modulus);
      }
    }
  }

  Overlap find(std::size_t k, std::int64_t target) {
    if (--work_ < 0) return Overlap::kUndecided;
    const Level& l = levels_[k];
    if (target < 0 || target > l.reach) return Overlap::kApart;
    if (k == n_) return Overlap::kShared;  // target == 0 == reach
    if (target % l.gcd != 0) return Overlap::kApart;
    if (l.dense) return Overlap::kShared;
    // z_k in [lo, hi] leaves a remainder within what terms k+1.. reach; it must also be a
    // multiple of their gcd g: c·z = target (mod g), solvable since gcd(c, g) = l.gcd divides
    // the target, with solutions z0 + i·m. Tried from the remainder nearest the middle of the
    // rest's reach outwards: sums are densest there, sparse near either end.
    const std::int64_t rest = levels_[k + 1].reach, m = l.modulus;
    const std::int64_t hi = std::min(l.bound, target / l.coef);
    const std::int64_t lo = target > rest ? ceil_div(target - rest, l.coef) : 0;
    const std::int64_t z0 = mul_mod((target / l.gcd) % m, l.inverse, m);
    const std::int64_t skip = ((z0 - lo) % m + m) % m;
    if (lo > hi || skip > hi - lo) return Overlap::kApart;
    const std::int64_t first = lo + skip, count = (hi - first) / m + 1;
    const std::int64_t middle = (target - rest / 2) / l.coef;
    std::int64_t up = middle <= first ? 0 : std::min((middle - first) / m, count - 1);
    for (std::int64_t down = up - 1; up < count || down >= 0; ++up, --down) {
      for (const std::int64_t i : {up, down}) {
        if (i < 0 || i >= count) continue;
        const Overlap found = find(k + 1, target - l.coef * (first + i * m));
        if (found != Overlap::kApart) return found;
      }
    }
    return Overlap::kApart;
  }

 private:
  struct Level {
    std::int64_t coef = 0, bound = 0;
    std::int64_t reach = 0, gcd = 0;  // of this term and the smaller ones
    bool dense = false;
    std::int64_t modulus = 1, inverse = 0;  // of this term's congruence, when not dense
  };
  std::array<Level, kMaxTerms + 1> levels_{};
  std::size_t n_;
  std::int64_t work_;
};

// Appends the view's non-trivial dims (extent > 1, stride > 0) and element bytes as terms.
// Coefficients and bounds fit: each (bound·coef) is within the view's extent.
bool add_terms(const ByteView& v, std::array<Term, kMaxTerms>& terms, std::size_t& n) {
  if (v.shape.size() > static_cast<std::size_t>(kMaxRank)) return false;
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (v.shape[i] > 1 && v.strides[i] > 0) {
      terms[n++] = {v.strides[i] * v.element_size, v.shape[i] - 1};
    }
  }
  if (v.element_size > 1) terms[n++] = {1, v.element_size - 1};
  return true;
}

Overlap search(const ByteView& a, const ByteView& b, const Placement& p, std::int64_t max_work) {
  std::array<Term, kMaxTerms> terms{};
  std::size_t n = 0;
  if (!add_terms(a, terms, n) || !add_terms(b, terms, n)) return Overlap::kUndecided;
  std::sort(terms.begin(), terms.begin() + n,
            [](const Term& x, const Term& y) { return x.coef > y.coef; });
  // Equal coefficients merge into one term: z1 + z2 takes every value up to u1 + u2.
  std::size_t merged = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (merged > 0 && terms[merged - 1].coef == terms[i].coef) {
      terms[merged - 1].bound += terms[i].bound;
    } else {
      terms[merged++] = terms[i];
    }
  }
  const std::int64_t target = p.delta + p.bytes_b - 1;  // a's first byte to b's last
  return Search({terms.data(), merged}, max_work).find(0, target);
}

}  // namespace

Overlap memory_overlap_by_search(const ByteView& a, const ByteView& b, std::int64_t max_work) {
  Placement p{};
  if (const std::optional<Overlap> settled = place(a, b, p)) return *settled;
  return search(a, b, p, max_work);
}

Overlap memory_overlap(const ByteView& a, const ByteView& b, std::int64_t max_work) {
  Placement p{};
  if (const std::optional<Overlap> settled = place(a, b, p)) return *settled;
  if (const std::optional<Overlap> rows = by_rows(a, b, p.delta)) return *rows;
  return search(a, b, p, max_work);
}

bool may_share_memory(const Tensor& a, const Tensor& b) {
  const auto view = [](const Tensor& t) {
    return ByteView{reinterpret_cast<std::uintptr_t>(t.data()),
                    static_cast<std::int64_t>(t.element_size()),
                    {t.shape().begin(), t.shape().end()},
                    {t.strides().begin(), t.strides().end()}};
  };
  return memory_overlap(view(a), view(b)) != Overlap::kApart;
}

}  // namespace tileops::ops
