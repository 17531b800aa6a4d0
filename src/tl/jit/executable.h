// A kernel specialisation prepared by one backend. The jit keeps backends behind this interface:
// interp now, the compiled cpu and cuda backends later.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tileops/tl/ir.h"
#include "tileops/tl/jit.h"

namespace tileops::tl {

class Executable {
 public:
  virtual ~Executable() = default;
  // The block count `core_num = 0` means on this backend's device (CPU backends: `pool`).
  virtual std::int64_t all_cores(const ThreadPool& pool) const = 0;
  // Runs `num_blocks` blocks (CPU backends: on `pool`). `args` holds one runtime argument per
  // Function param, in order: a Pointer for each GlobalAddress, int64 / double (or int64) / bool
  // for Int / Float / Bool; the jit has checked their kinds.
  virtual void launch(std::int64_t num_blocks, std::span<const Argument> args,
                      ThreadPool& pool) const = 0;
};

// Prepares `function` (verified, after passes) for options.backend ("auto": the best one
// available). Throws kUnsupported naming the backend when it is not built.
std::shared_ptr<const Executable> prepare(Function function, const Options& options,
                                          const std::string& kernel_name);

// The interp backend (src/tl/interp/executable.cc).
std::shared_ptr<const Executable> make_interp_executable(Function function);
// The cpu backend (src/tl/cpu/executable.cc): generated C++ compiled by the system compiler,
// through the persistent cache.
std::shared_ptr<const Executable> make_cpu_executable(const Function& function,
                                                      const Options& options,
                                                      const std::string& kernel_name);
// The backend options.backend names ("auto" resolved: cpu with a compiler, else interp).
std::string resolve_backend(const Options& options);

// `kernel_name` as one safe file-name component (dump files, kept sources): letters, digits,
// '_', '-' and '.' kept, anything else '_', no leading '.', at most 80 characters. A kernel name
// is not a path: "../../x" stays in its directory.
std::string file_stem(std::string_view kernel_name);
// Writes `text` to dump_dir/`file` (dump_dir created on demand); throws kInvalidArgument naming
// the dump_dir and the cause when it cannot.
void write_dump(const std::string& dump_dir, const std::string& file, std::string_view text);

}  // namespace tileops::tl
