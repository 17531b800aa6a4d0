// bfloat16 matrix products on the AVX512-BF16 dot-product instruction (VDPBF16PS: each float32
// lane adds the products of one pair of bfloat16 elements; Zen 4 and later, Cooper Lake, Sapphire
// Rapids). It does twice the multiply-adds of a float32 FMA per instruction, with no widening.
// x86 intrinsics, not Highway (Highway 1.0 has no target with it); used only where
// dpbf16_enabled() says so.
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// True when the CPU has AVX512-BF16 and Highway may dispatch to AVX-512 (tests that restrict the
// dispatch targets turn it off with them).
bool dpbf16_enabled();

// The contract of amx_bf16_block (amx_kernels.h), same packed layouts: acc = (accumulate ? acc :
// 0) + A·B for rows (a multiple of 16) × n_strips·16 columns × kc (a multiple of 32). Like AMX,
// the instruction treats subnormal inputs as zero and flushes subnormal sums to zero.
void dpbf16_block(const std::uint16_t* a, std::int64_t rows, std::int64_t kc,
                  const std::uint16_t* b, std::int64_t n_strips, float* acc, std::int64_t ld_acc,
                  bool accumulate);

// The decode form: out[i·ld_out + j] = Σ_p x[i·ld_x + p] · w[j·ld_w + p] for i < m (<= 16),
// j < n, p < k (any k), x and w bfloat16 bits with contiguous rows; each weight row is read from
// memory once.
void dpbf16_dot_rows(const std::uint16_t* x, std::int64_t ld_x, std::int64_t m,
                     const std::uint16_t* w, std::int64_t ld_w, std::int64_t n, std::int64_t k,
                     float* out, std::int64_t ld_out);

// The packed-weight form (packed_linear_kernels.h, with bfloat16 pairs): acc[j·16 + i] =
// (accumulate ? acc[j·16 + i] : 0) + Σ_q Σ_t x[q·32 + 2i + t] · w[q·32 + 2j + t] over pairs
// q < pairs, t < 2: weight rows j and x rows i, both [pairs][16][2]. The weight stream is
// prefetched into L2 a few KiB ahead when `fetch` is set.
void dpbf16_packed_block(const std::uint16_t* x, const std::uint16_t* w, std::int64_t pairs,
                         float* acc, bool accumulate, bool fetch);

// The same for two blocks of 16 x rows (x0, x1) and half of the weight rows: w points at pair
// 0 of row 8·h of the group (w_group + 16·h), and acc0/acc1[j·16 + i] take rows 8·h + j, j < 8.
// Per pair two x loads and 8 broadcasts feed 16 dot products, where one block of x rows takes
// 16 broadcasts for 16 (bench/results/cpu-tuning.md).
void dpbf16_packed_half_blocks(const std::uint16_t* x0, const std::uint16_t* x1,
                               const std::uint16_t* w, std::int64_t pairs, float* acc0, float* acc1,
                               bool accumulate, bool fetch);

// 16 weight rows in place against one or two blocks of 16 x rows: acc0[j·16 + i] = (accumulate ?
// acc0[j·16 + i] : 0) + Σ_q Σ_t x0[q·32 + 2i + t] · w[j·ld_w + 2q + t] over pairs q < pairs (x0
// as dpbf16_packed_block's, weight rows j < 16 with contiguous K), and acc1 likewise from x1
// unless it is null. A weight panel dequantized row by row needs no packing for it. Meanwhile
// fetch_lines 64-byte lines from `fetch` on are requested into L2, spread over the pairs (a
// burst of requests stalls on the CPU's few outstanding misses).
void dpbf16_row_weights_block(const std::uint16_t* x0, const std::uint16_t* x1,
                              const std::uint16_t* w, std::int64_t ld_w, std::int64_t pairs,
                              float* acc0, float* acc1, bool accumulate,
                              const void* fetch = nullptr, std::int64_t fetch_lines = 0);

}  // namespace tileops::ops::cpu
