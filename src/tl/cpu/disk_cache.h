// The persistent JIT cache of compiled cpu kernels (docs/tile-language.md, "Persistent cache"):
// one shared object per key in $TILEOPS_CACHE_DIR (default ~/.cache/tileops) under cpu/, with a
// small metadata file binding it to its key and to its bytes (SHA-256). Entries are written to a
// temporary name and renamed into place, so concurrent processes never see a partial file, under
// a lock that keeps each object with its own metadata; an entry that fails its check is rebuilt.
//
// Trust model: the cache may hold only code this user's processes built. Its directories must be
// private (owned by this user, not writable by group or others, not symbolic links); a shared or
// foreign directory is refused with an error. Without a usable directory (HOME unset, or the
// default directory cannot be created) kernels are compiled into a private per-process temporary
// directory (mkdtemp, removed at exit), with a one-line notice on stderr. The metadata check
// catches corrupt, truncated, copied or linked entries; it cannot stop this user (who may write
// the directory) from planting code, which is what the directory checks are for.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace tileops::tl::cpu {

// The private cache directory for cpu kernels (created 0700 on demand). Throws kCompileError
// naming the directory and the reason when it is refused or cannot be created.
std::filesystem::path cache_dir();
// The SHA-256 of `text` as 64 hex digits: the name of the entry for a key text.
std::string digest(const std::string& text);

// Writes `text` to `path`, created 0600 and never through a symbolic link. False on any failure,
// with errno telling why.
bool write_file(const std::filesystem::path& path, std::string_view text);

// The metadata an entry for `key` whose object holds `object_bytes` must have.
std::string entry_metadata(std::string_view key, std::string_view object_bytes);
// Whether `metadata` (a file's untrusted bytes) is exactly the metadata of an entry for `key`
// holding `object_bytes` (a non-empty ELF file). Pure; safe on any input.
bool entry_metadata_matches(std::string_view metadata, std::string_view key,
                            std::string_view object_bytes);

// An open shared object, read and verified through this descriptor (owned: closed on
// destruction), so that what is loaded is the file that was checked (load it via fd_path()).
class CacheEntry {
 public:
  CacheEntry() = default;
  CacheEntry(std::string path, int fd, std::string bytes, bool cached);
  ~CacheEntry();
  CacheEntry(CacheEntry&& other) noexcept;
  CacheEntry& operator=(CacheEntry&& other) noexcept;
  CacheEntry(const CacheEntry&) = delete;
  CacheEntry& operator=(const CacheEntry&) = delete;

  const std::string& path() const { return path_; }    // where it lies (may be removed already)
  const std::string& bytes() const { return bytes_; }  // the verified contents
  bool cached() const { return cached_; }              // found in the cache, not built now
  int fd() const { return fd_; }
  // Hands the descriptor over (the caller closes it).
  int release();

 private:
  std::string path_;
  int fd_ = -1;
  std::string bytes_;
  bool cached_ = false;
};

// The valid entry for `key` (a digest), or a new one made by `build(path)`, which writes a shared
// object at `path` or throws. With `always_compile` the cache is neither read nor written: the
// object is built at a temporary path, removed once opened.
CacheEntry find_or_build(const std::string& key, bool always_compile,
                         const std::function<void(const std::string& path)>& build);
// Removes the entry for `key` (one that matched its metadata but failed to load), so that the
// next find_or_build rebuilds it.
void discard(const std::string& key);

}  // namespace tileops::tl::cpu
