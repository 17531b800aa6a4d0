// Lowers a verified, optimised tile-language Function to C++ source for the `cpu` backend. The
// source starts with the tile runtime (tl_runtime.h) and defines
//   extern "C" int tl_kernel(i64 block, i64 num_blocks, const TlArg* args, const TlRt* rt);
// which runs one block and returns 0, or 1 + the index into `checks` of the run-time check that
// failed (a negative tensor extent, a range step of 0).
#pragma once

#include <string>
#include <vector>

#include "tileops/tl/ir.h"

namespace tileops::tl::cpu {

// A check the kernel makes at run time: the op it guards, as trace_error reports it.
struct RuntimeCheck {
  SourceLoc loc;
  std::string what;
  std::string message;
};

struct GeneratedSource {
  std::string text;
  std::vector<RuntimeCheck> checks;
};

GeneratedSource generate(const Function& function);

}  // namespace tileops::tl::cpu
