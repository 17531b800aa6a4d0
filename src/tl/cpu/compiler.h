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
// The flags `options` select (opt_level, debug, fast_math, target; an empty target takes
// $TILEOPS_TL_TARGET when set, else native; native less the instruction sets this process's
// CPUID does not report).
std::string compile_flags(const Options& options);
// The host CPU (model and feature flags) code compiled with -march=native depends on.
const std::string& cpu_identity();

// Compiles `source_path` into `output_path`. Returns "" on success, else the compiler's
// messages (and exit status).
std::string compile(const std::string& source_path, const std::string& output_path,
                    const Options& options);

// Compiler invocations in this process (tests check the cache with it).
std::int64_t compile_count();

}  // namespace tileops::tl::cpu
