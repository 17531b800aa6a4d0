#include "src/ops/cpu/simd/dpbf16_fp8_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "src/ops/cpu/simd/dpbf16_intrinsics.h"
#include "tileops/core/error.h"
#include "tileops/core/float8.h"

namespace tileops::ops::cpu {

std::int64_t dpbf16_fp8_ld_x(std::int64_t k) { return (k + 31) / 32 * 32; }

#if TILEOPS_DPBF16_CODE
TILEOPS_DPBF16_WARNINGS_OFF
namespace {

constexpr int kCols = 4;  // weight rows (output columns) per pass
constexpr int kRows = 4;  // x rows per pass

// The bfloat16 bits of a format's 128 magnitudes (codes 0-127): exact, float8 values being
// bfloat16 values; NaN codes give bfloat16's quiet NaN.
struct Table {
  alignas(64) std::uint16_t bits[128];
};

Table make_table(bool e4m3) {
  Table t{};
  for (int c = 0; c < 128; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    const float f = e4m3 ? float8_e4m3fn_to_float(code) : float8_e5m2_to_float(code);
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    t.bits[c] = std::isnan(f) ? std::uint16_t{0x7FC0} : static_cast<std::uint16_t>(u >> 16);
  }
  return t;
}

const Table& table_of(DataType kind) {
  static const Table e4m3 = make_table(true), e5m2 = make_table(false);
  return kind == DataType::kFloat8E4M3FN ? e4m3 : e5m2;
}

struct Lookup {
  __m512i t0, t1, t2, t3;  // magnitudes 0-31, 32-63, 64-95, 96-127
};

// 32 codes as bfloat16: the magnitude's entry (VPERMI2W reads an index's low 6 bits: magnitudes
// 0-63 from t0/t1, 64-127 from t2/t3, picked by bit 6) with the code's sign as bit 15.
TILEOPS_DPBF16_TARGET inline __m512bh decode32(__m256i bytes, const Lookup& t) {
  const __m512i w = _mm512_cvtepu8_epi16(bytes);
  const __m512i low = _mm512_permutex2var_epi16(t.t0, w, t.t1);
  const __m512i high = _mm512_permutex2var_epi16(t.t2, w, t.t3);
  const __m512i mag =
      _mm512_mask_mov_epi16(low, _mm512_test_epi16_mask(w, _mm512_set1_epi16(0x40)), high);
  // mag | ((w << 8) & 0x8000): ternary table 0xf8 is a | (b & c).
  return reinterpret_cast<__m512bh>(_mm512_ternarylogic_epi32(
      mag, _mm512_slli_epi16(w, 8), _mm512_set1_epi16(static_cast<short>(0x8000)), 0xf8));
}

// One run of 32 K at `at`: kM rows of x times the kCols rows' codes (`bytes`), into acc.
template <int kM>
TILEOPS_DPBF16_TARGET inline void multiply(const std::uint16_t* x, std::int64_t ld_x,
                                           std::int64_t at, const __m256i* bytes, const Lookup& t,
                                           __m512 (&acc)[kM][kCols]) {
  __m512bh xv[kM];
  for (int i = 0; i < kM; ++i) {
    xv[i] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(x + i * ld_x + at));
  }
  for (int c = 0; c < kCols; ++c) {
    const __m512bh wv = decode32(bytes[c], t);
    for (int i = 0; i < kM; ++i) acc[i][c] = _mm512_dpbf16_ps(acc[i][c], wv, xv[i]);
  }
}

// kM rows of x against up to kCols weight rows (`rows`, unused ones repeating the first), all of
// K; `next` (nullable entries) are the next pass's weight rows, requested into L2 two lines per
// step so that each pass's four short row streams find their bytes there.
template <int kM>
TILEOPS_DPBF16_TARGET void pass(const std::uint16_t* x, std::int64_t ld_x,
                                const std::uint8_t* const* rows, std::int64_t cols, std::int64_t k,
                                const Lookup& t, const std::uint8_t* const* next, float* out,
                                std::int64_t ld_out) {
  __m512 acc[kM][kCols];
  for (auto& row : acc) {
    for (__m512& a : row) a = _mm512_setzero_ps();
  }
  std::int64_t p = 0, step = 0;
  for (; p + 32 <= k; p += 32, ++step) {
    const std::uint8_t* fetch = next[step & 3];
    if (fetch != nullptr) {
      const std::int64_t offset = (step >> 2) * 128;
      __builtin_prefetch(fetch + offset, 0, 2);
      __builtin_prefetch(fetch + offset + 64, 0, 2);
    }
    __m256i bytes[kCols];
    for (int c = 0; c < kCols; ++c) {
      bytes[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[c] + p));
    }
    multiply<kM>(x, ld_x, p, bytes, t, acc);
  }
  if (p < k) {  // the tail: codes past k are not read; x is zero there
    const auto mask = static_cast<__mmask32>((std::uint64_t{1} << (k - p)) - 1);
    __m256i bytes[kCols];
    for (int c = 0; c < kCols; ++c) bytes[c] = _mm256_maskz_loadu_epi8(mask, rows[c] + p);
    multiply<kM>(x, ld_x, p, bytes, t, acc);
  }
  for (int i = 0; i < kM; ++i) {
    for (std::int64_t c = 0; c < cols; ++c) out[i * ld_out + c] = dpbf16_sum_lanes(acc[i][c]);
  }
}

TILEOPS_DPBF16_TARGET void dot_rows(const std::uint16_t* x, std::int64_t ld_x, std::int64_t m,
                                    const std::uint8_t* w, std::int64_t ld_w, const Table& table,
                                    std::int64_t n, std::int64_t k, float* out,
                                    std::int64_t ld_out) {
  const Lookup t{_mm512_loadu_si512(table.bits), _mm512_loadu_si512(table.bits + 32),
                 _mm512_loadu_si512(table.bits + 64), _mm512_loadu_si512(table.bits + 96)};
  for (std::int64_t j0 = 0; j0 < n; j0 += kCols) {
    const std::int64_t cols = std::min<std::int64_t>(kCols, n - j0);
    const std::uint8_t* rows[kCols];
    const std::uint8_t* next[kCols];
    for (int c = 0; c < kCols; ++c) {
      rows[c] = w + (c < cols ? j0 + c : j0) * ld_w;
      next[c] = j0 + kCols + c < n ? w + (j0 + kCols + c) * ld_w : nullptr;
    }
    const std::uint8_t* const none[kCols] = {nullptr, nullptr, nullptr, nullptr};
    for (std::int64_t i0 = 0; i0 < m; i0 += kRows) {
      // Later passes over the same weight rows find them in L1/L2: only the first fetches.
      const std::uint8_t* const* fetch = i0 == 0 ? next : none;
      const std::uint16_t* xi = x + i0 * ld_x;
      float* o = out + i0 * ld_out + j0;
      switch (std::min<std::int64_t>(kRows, m - i0)) {
        case 1:
          pass<1>(xi, ld_x, rows, cols, k, t, fetch, o, ld_out);
          break;
        case 2:
          pass<2>(xi, ld_x, rows, cols, k, t, fetch, o, ld_out);
          break;
        case 3:
          pass<3>(xi, ld_x, rows, cols, k, t, fetch, o, ld_out);
          break;
        default:
          pass<4>(xi, ld_x, rows, cols, k, t, fetch, o, ld_out);
          break;
      }
    }
  }
}

TILEOPS_DPBF16_TARGET void to_bf16(const std::uint8_t* codes, std::int64_t n, const Table& table,
                                   std::uint16_t* out) {
  const Lookup t{_mm512_loadu_si512(table.bits), _mm512_loadu_si512(table.bits + 32),
                 _mm512_loadu_si512(table.bits + 64), _mm512_loadu_si512(table.bits + 96)};
  for (std::int64_t p = 0; p < n; p += 32) {
    const auto mask =
        n - p >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((std::uint64_t{1} << (n - p)) - 1);
    const __m512bh v = decode32(_mm256_maskz_loadu_epi8(mask, codes + p), t);
    _mm512_mask_storeu_epi16(out + p, mask, reinterpret_cast<__m512i>(v));
  }
}

}  // namespace

void dpbf16_fp8_to_bf16(const std::uint8_t* codes, std::int64_t n, DataType kind,
                        std::uint16_t* out) {
  if (kind != DataType::kFloat8E4M3FN && kind != DataType::kFloat8E5M2) {
    throw_internal_error("dpbf16_fp8_to_bf16", "float8_e4m3fn or float8_e5m2 codes only");
  }
  to_bf16(codes, n, table_of(kind), out);
}

void dpbf16_fp8_dot_rows(const std::uint16_t* x, std::int64_t ld_x, std::int64_t m,
                         const std::uint8_t* w, std::int64_t ld_w, DataType kind, std::int64_t n,
                         std::int64_t k, float* out, std::int64_t ld_out) {
  if (kind != DataType::kFloat8E4M3FN && kind != DataType::kFloat8E5M2) {
    throw_internal_error("dpbf16_fp8_dot_rows", "float8_e4m3fn or float8_e5m2 codes only");
  }
  dot_rows(x, ld_x, m, w, ld_w, table_of(kind), n, k, out, ld_out);
}

TILEOPS_DPBF16_WARNINGS_ON

#else  // no AVX512-BF16 code on this platform

void dpbf16_fp8_to_bf16(const std::uint8_t*, std::int64_t, DataType, std::uint16_t*) {
  throw Error(ErrorKind::kUnsupported, "dpbf16_fp8_to_bf16: AVX512-BF16 is not available here");
}

void dpbf16_fp8_dot_rows(const std::uint16_t*, std::int64_t, std::int64_t, const std::uint8_t*,
                         std::int64_t, DataType, std::int64_t, std::int64_t, float*, std::int64_t) {
  throw Error(ErrorKind::kUnsupported, "dpbf16_fp8_dot_rows: AVX512-BF16 is not available here");
}

#endif

}  // namespace tileops::ops::cpu
