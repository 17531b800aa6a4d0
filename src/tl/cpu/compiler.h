// The system C++ compiler the cpu backend drives: found at run time ($TILEOPS_CXX, else `c++` on
// PATH), identified by its `--version` output (part of the cache key), invoked to build a shared
// object from generated source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tileops/tl/jit.h"

namespace tileops::tl::cpu {

// The compiler command, or nothing when none is installed. Looked up once per process.
const std::optional<std::string>& find_compiler();
// `<compiler> --version`, once per process ("" without a compiler).
const std::string& compiler_identity();
// The flags `options` select (opt_level, debug, fast_math, target as resolve_target gives it;
// native less the instruction sets this process's CPUID does not report), then
// options.compiler_args.
std::string compile_flags(const Options& options);
// The -march target `options` select: options.target, else $TILEOPS_TL_TARGET, else the one a
// forced $TILEOPS_SIMD_TARGET implies (avx2: haswell, sse4: x86-64-v2, scalar: x86-64), else
// "native". Throws Error (kInvalidArgument) when $TILEOPS_SIMD_TARGET is unusable.
std::string resolve_target(const Options& options);
// Throws unless `target` is "native" or a well-formed -march name the compiler knows whose
// instruction sets this CPU has (kInvalidArgument: malformed or unknown; kUnsupported: code for
// it would die of SIGILL here). `kernel` names the kernel in the message. Cached per target.
void check_target(const std::string& target, const std::string& kernel);
// The host CPU (model and feature flags) code compiled with -march=native depends on.
const std::string& cpu_identity();

// Compiles `source_path` into `output_path`. Returns "" on success, else the compiler's
// messages (and exit status).
std::string compile(const std::string& source_path, const std::string& output_path,
                    const Options& options);

// Compiler invocations in this process (tests check the cache with it).
std::int64_t compile_count();

}  // namespace tileops::tl::cpu
