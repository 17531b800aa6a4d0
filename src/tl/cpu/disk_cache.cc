// The persistent cache of cpu kernels (see disk_cache.h). Layout: cpu/<key>.so and
// cpu/<key>.meta ("tileops-tl-cpu 1 <size> <checksum>"), and cpu/.lock. A reader trusts an object
// only when the metadata matches its bytes, so a truncated or foreign file is rebuilt rather than
// loaded. Reading an entry and committing one (the object's rename, then its metadata) hold an
// exclusive lock on cpu/.lock, so that builders racing on one key (whose objects differ: each
// names its own temporary source) cannot leave one's object with another's metadata. Compiles
// run outside the lock.
#include "src/tl/cpu/disk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tileops/core/error.h"

namespace tileops::tl::cpu {
namespace {

std::uint64_t fnv1a(const std::string& s, std::uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string metadata(const std::string& object) {
  return "tileops-tl-cpu 1 " + std::to_string(object.size()) + " " + digest(object) + "\n";
}

// A name no other thread or process uses.
std::filesystem::path temporary(const std::filesystem::path& dir, const std::string& key) {
  static std::atomic<std::uint64_t> counter{0};
  return dir / (key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter));
}

// False (and no file left behind) when `target` cannot be replaced, e.g. it is a directory.
bool write_atomically(const std::filesystem::path& dir, const std::string& key,
                      const std::filesystem::path& target, const std::string& text) {
  const std::filesystem::path tmp = temporary(dir, key);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

// An exclusive lock on dir/.lock across threads and processes (each holder opens the file, so
// threads exclude one another too), released when it goes out of scope. Without the file (a
// read-only directory) it locks nothing: nothing can be committed there either.
class CacheLock {
 public:
  explicit CacheLock(const std::filesystem::path& dir)
      : fd_(::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~CacheLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string digest(const std::string& text) {
  return hex(fnv1a(text, 0xcbf29ce484222325ULL)) + hex(fnv1a(text, 0x84222325cbf29ce4ULL));
}

std::filesystem::path cache_dir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("TILEOPS_CACHE_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = std::filesystem::path(home) / ".cache" / "tileops";
  } else {
    dir = std::filesystem::temp_directory_path() / "tileops-cache";
  }
  dir /= "cpu";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    // The kernel cannot be built, as when the compiler fails (C API: TILEOPS_COMPILE_ERROR).
    throw Error(ErrorKind::kCompileError, "tl cpu backend: cannot create the JIT cache directory " +
                                              dir.string() + " (" + ec.message() +
                                              "); set TILEOPS_CACHE_DIR");
  }
  return dir;
}

CacheEntry find_or_build(const std::string& key, bool always_compile,
                         const std::function<void(const std::string& path)>& build) {
  const std::filesystem::path dir = cache_dir();
  const std::filesystem::path object = dir / (key + ".so");
  const std::filesystem::path meta = dir / (key + ".meta");
  if (always_compile) {
    const std::filesystem::path tmp = temporary(dir, key).string() + ".so";
    build(tmp.string());
    return CacheEntry{tmp.string(), true};
  }
  {
    const CacheLock lock(dir);
    if (std::filesystem::exists(meta) && read_file(meta) == metadata(read_file(object))) {
      return CacheEntry{object.string(), false};
    }
  }
  const std::filesystem::path tmp = temporary(dir, key).string() + ".so";
  build(tmp.string());
  const std::string bytes = read_file(tmp);
  const CacheLock lock(dir);
  std::error_code ec;
  std::filesystem::rename(tmp, object, ec);  // atomic: a process loading it keeps its copy
  // Something that is not ours to replace (a directory) holds the entry's name: this build is
  // loaded uncached. Without its metadata the entry is rebuilt next time.
  if (ec) return CacheEntry{tmp.string(), true};
  write_atomically(dir, key, meta, metadata(bytes));
  return CacheEntry{object.string(), false};
}

}  // namespace tileops::tl::cpu
