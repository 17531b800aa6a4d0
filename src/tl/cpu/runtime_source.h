// The text of the tile runtime that every generated kernel starts with (runtime_source.cc).
#pragma once

namespace tileops::tl::cpu {

const char* runtime_source();

}  // namespace tileops::tl::cpu
