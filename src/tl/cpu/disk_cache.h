// The persistent JIT cache of compiled cpu kernels (DESIGN.md §4): one shared object per key in
// $TILEOPS_CACHE_DIR (default ~/.cache/tileops) under cpu/, with a small metadata file holding
// its size and checksum. Entries are written to a temporary name and renamed into place, so
// concurrent processes never see a partial file, under a lock that keeps each object with its own
// metadata; an entry that fails its check is rebuilt.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace tileops::tl::cpu {

// The cache directory for cpu kernels (created on demand).
std::filesystem::path cache_dir();
// A 128-bit hex digest of `text` (two independent FNV-1a 64 hashes).
std::string digest(const std::string& text);

struct CacheEntry {
  std::string path;        // the shared object to dlopen
  bool temporary = false;  // always_compile: remove it once loaded
};

// The valid entry for `key` (a digest), or a new one made by `build(path)`, which writes a shared
// object at `path` and returns "" or throws. With `always_compile` the cache is neither read nor
// written: the object is built at a temporary path.
CacheEntry find_or_build(const std::string& key, bool always_compile,
                         const std::function<void(const std::string& path)>& build);

}  // namespace tileops::tl::cpu
