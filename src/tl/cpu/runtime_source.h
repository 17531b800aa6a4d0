// The text of the tile runtime that every generated kernel starts with: tl_runtime.h, embedded
// by CMake (tl_runtime_source.cc in the build tree).
#pragma once

namespace tileops::tl::cpu {

const char* runtime_source();

}  // namespace tileops::tl::cpu
