// Backend selection: which Executable a specialisation gets.
#include "src/tl/jit/executable.h"
#include "tileops/core/error.h"

namespace tileops::tl {

std::shared_ptr<const Executable> prepare(Function function, const Options& options,
                                          const std::string& kernel_name) {
  if (options.backend == "cpu" || options.backend == "cuda") {
    throw_argument_error(ErrorKind::kUnsupported, kernel_name, "backend",
                         "interp or auto (the '" + options.backend + "' backend is not built yet)",
                         "'" + options.backend + "'");
  }
  return make_interp_executable(std::move(function));  // "interp" and "auto"
}

}  // namespace tileops::tl
