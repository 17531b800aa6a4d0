#include "tileops/runtime/knobs.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tileops/core/error.h"

namespace tileops {
namespace {

constexpr Knob kKnobs[] = {
    {"TILEOPS_NUM_THREADS", "a count in [1, 4096]",
     "threads of the CPU pool (default: one per hardware thread)"},
#if defined(__x86_64__) || defined(__i386__)
    {"TILEOPS_SIMD_TARGET", "native|avx512|avx2|sse4|scalar",
#else
    {"TILEOPS_SIMD_TARGET", "native (or scalar where the build compiles it)",
#endif
     "the SIMD target kernels dispatch to, and the -march of tl kernels (default: native)"},
    {"TILEOPS_AMX", "0 turns it off",
     "AMX-BF16 for bfloat16 matrix products, where the CPU has it and the target is avx512"},
    {"TILEOPS_TL_BACKEND", "interp|cpu",
     "the backend tl kernels run on (default: cpu when a compiler is found)"},
    {"TILEOPS_TL_TARGET", "a -march value", "overrides the -march of generated tl kernels"},
    {"TILEOPS_CXX", "a compiler; empty turns the cpu backend off",
     "the C++ compiler of the tl cpu backend (default: c++ on PATH)"},
    {"TILEOPS_CACHE_DIR", "a private directory of this user",
     "the JIT cache of tl kernels (default: ~/.cache/tileops)"},
    {"TILEOPS_TL_DUMP_DIR", "a directory",
     "writes the IR and generated code of every tl kernel that sets no dump_dir"},
    {"TILEOPS_TL_SOFTMAX_PIPELINE", "0|1",
     "whether the tl softmax normalises a 16-bit row during the next row's exp pass (default: "
     "yes but on Intel cores)"},
    {"TILEOPS_TL_STREAM_BYTES", "a byte count >= 0",
     "tensor bytes above which tl kernels stream their stores (default: the last-level cache)"},
    {"TILEOPS_PYTHON", "a Python executable",
     "the Python the CLI's Python commands run (default: the build's)"},
    {"TILEOPS_EXTENSION_DIR", "a directory",
     "read by `import tileops`: where it looks for its extension modules first"},
    {"TILEOPS_CATALOG_DIR", "a directory",
     "the kernel catalog `tileops catalog` reads (default: the source tree's catalog/)"},
    {"TILEOPS_CATALOG_BACKENDS", "a comma list of interp, cpu",
     "the backends the catalog's tests run on (default: $TILEOPS_TL_BACKEND, else both)"},
    {"TILEOPS_CATALOG_LARGE", "1 turns it on",
     "the catalog's tests also run their large shapes on the cpu backend"},
};

// Read, not owned: listed so that knob() stays the only reader.
constexpr std::string_view kSystemVariables[] = {"PATH", "HOME", "PYTHONPATH"};

bool listed(std::string_view name) {
  for (const Knob& k : kKnobs) {
    if (k.name == name) return true;
  }
  for (std::string_view s : kSystemVariables) {
    if (s == name) return true;
  }
  return false;
}

}  // namespace

std::span<const Knob> knobs() { return kKnobs; }

std::optional<std::string> knob(std::string_view name) {
  if (!listed(name)) {
    throw_internal_error("knob", "environment variable " + std::string(name) +
                                     " is not in the table of src/runtime/knobs.cc");
  }
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<long long> knob_integer(std::string_view name, long long lo, long long hi) {
  const std::optional<std::string> text = knob(name);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text->c_str(), &end, 10);
  const bool digits_only = std::isdigit(static_cast<unsigned char>(text->back())) &&
                           (std::isdigit(static_cast<unsigned char>(text->front())) ||
                            text->front() == '-');  // strtoll would skip leading spaces
  if (!digits_only || errno != 0 || *end != '\0' || v < lo || v > hi) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string(name) + "='" + *text + "': expected a whole number in [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "], or unset for the default");
  }
  return v;
}

}  // namespace tileops
