// Backend selection: which Executable a specialisation gets. "auto" is the cpu backend when a
// C++ compiler is installed and the interpreter otherwise (with a one-line notice, once per
// process); $TILEOPS_TL_BACKEND (interp or cpu) overrides what "auto" picks.
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "src/tl/cpu/compiler.h"
#include "src/tl/jit/executable.h"
#include "tileops/core/error.h"
#include "tileops/runtime/knobs.h"

namespace tileops::tl {
namespace {

std::string auto_backend() {
  static const std::string chosen = [] {
    if (const std::optional<std::string> b = knob("TILEOPS_TL_BACKEND"); b && !b->empty()) {
      if (*b == "interp" || *b == "cpu") return *b;
      std::fprintf(stderr, "tileops: ignoring TILEOPS_TL_BACKEND=%s (expected interp or cpu)\n",
                   b->c_str());
    }
    if (cpu::find_compiler()) return std::string("cpu");
    std::fprintf(stderr,
                 "tileops: no C++ compiler found (c++ on PATH or $TILEOPS_CXX); tile-language "
                 "kernels run on the interp backend\n");
    return std::string("interp");
  }();
  return chosen;
}

}  // namespace

std::string resolve_backend(const Options& options) {
  return options.backend == "auto" ? auto_backend() : options.backend;
}

std::shared_ptr<const Executable> prepare(Function function, const Options& options,
                                          const std::string& kernel_name) {
  const std::string backend = resolve_backend(options);
  if (backend == "cuda") {
    throw_argument_error(ErrorKind::kUnsupported, kernel_name, "backend",
                         "interp, cpu or auto (the 'cuda' backend is not built)", "'cuda'");
  }
  if (backend == "cpu") {
    if (!cpu::find_compiler()) {
      throw_argument_error(ErrorKind::kUnsupported, kernel_name, "backend",
                           "interp or auto (the 'cpu' backend needs a C++ compiler: c++ on PATH "
                           "or $TILEOPS_CXX)",
                           "'cpu'");
    }
    return make_cpu_executable(function, options, kernel_name);
  }
  return make_interp_executable(std::move(function));
}

}  // namespace tileops::tl
