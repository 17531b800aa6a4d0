// bfloat16 matrix products on Intel AMX tiles (Sapphire Rapids and later): TDPBF16PS adds a
// 16×32 · 32×16 bfloat16 product to a 16×16 float32 tile. x86 intrinsics, not Highway (which
// has no AMX target); used only where amx_bf16_enabled() says so.
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// True when cpu_amx_bf16() (the CPU has AMX-BF16 and the OS lets this process use it) and the
// environment variable TILEOPS_AMX is not "0" (read on every call, so a test can turn AMX off and
// on).
bool amx_bf16_enabled();

// Tile geometry: rows of an A tile, columns of a B strip, K per tile product.
inline constexpr std::int64_t kAmxRows = 16;
inline constexpr std::int64_t kAmxCols = 16;
inline constexpr std::int64_t kAmxK = 32;

// acc = (accumulate ? acc : 0) + A·B for one block, every size a whole number of tiles (rows a
// multiple of kAmxRows, kc of kAmxK), both operands packed so that every tile is 1 KiB of
// 64-byte rows:
// - a: row tile i at a + i·kc·kAmxRows, its K step s (kAmxRows rows × kAmxK) at
//   + s·kAmxK·kAmxRows, row-major: element (r, p) of the row tile at [(p / kAmxK)·kAmxK·kAmxRows
//   + r·kAmxK + p % kAmxK];
// - b: strip t of kAmxCols columns at b + t·kc·kAmxCols, pair-interleaved (VNNI): element (p, j)
//   at [(p / 2)·2·kAmxCols + 2·j + p % 2];
// - acc: float32 rows × n_strips·kAmxCols, row stride ld_acc elements.
// Call only when amx_bf16_enabled().
void amx_bf16_block(const std::uint16_t* a, std::int64_t rows, std::int64_t kc,
                    const std::uint16_t* b, std::int64_t n_strips, float* acc, std::int64_t ld_acc,
                    bool accumulate);

// A block product with amx_bf16_block's contract (amx_bf16_block, dpbf16_block).
using Bf16BlockFn = void (*)(const std::uint16_t* a, std::int64_t rows, std::int64_t kc,
                             const std::uint16_t* b, std::int64_t n_strips, float* acc,
                             std::int64_t ld_acc, bool accumulate);

// The linear form, C transposed: out = W·Xᵀ for 16·tiles rows of W read in place (a linear's
// weight, so it needs no packing) against 16·strips rows of X:
// - w: bfloat16 bits, 16·tiles rows × kc (kc a multiple of kAmxK), row stride ld_w elements;
// - xt: X's rows (zeros past M) as B strips: strip s at xt + s·kc·kAmxCols, pair-interleaved:
//   element (p, i) at [(p / 2)·2·kAmxCols + 2·i + p % 2];
// - out: float32 16·tiles × 16·strips, row stride ld_out (out(j, i) = Σ_p w(j, p)·x(i, p));
//   accumulate adds to it.
// Call only when amx_bf16_enabled().
void amx_bf16_rows(const std::uint16_t* w, std::int64_t ld_w, std::int64_t tiles, std::int64_t kc,
                   const std::uint16_t* xt, std::int64_t strips, float* out, std::int64_t ld_out,
                   bool accumulate);

}  // namespace tileops::ops::cpu
