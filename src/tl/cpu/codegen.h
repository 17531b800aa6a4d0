// Lowers a verified, optimised tile-language Function to C++ source for the `cpu` backend. The
// source starts with the tile runtime (runtime_source.cc) and defines
//   extern "C" int tl_kernel(i64 block, i64 num_blocks, const TlArg* args, const TlRt* rt);
// which runs one block and returns 0, or 1 + the index into `error_locs` of the op that found a
// run-time error (a negative tensor extent).
#pragma once

#include <string>
#include <vector>

#include "tileops/tl/ir.h"

namespace tileops::tl::cpu {

struct GeneratedSource {
  std::string text;
  std::vector<SourceLoc> error_locs;
};

GeneratedSource generate(const Function& function);

}  // namespace tileops::tl::cpu
