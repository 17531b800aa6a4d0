// The persistent cache of cpu kernels (see disk_cache.h). Layout: cpu/<key>.so, cpu/<key>.meta
// (entry_metadata: the key, the object's size and SHA-256) and cpu/.lock. A reader opens both
// without following symbolic links, reads the object through the descriptor it returns (the
// loader maps that same file), and trusts it only when the metadata names this key and the
// object's bytes. Reading an entry and committing one (the object's rename, then its metadata)
// hold an exclusive lock on cpu/.lock, so that builders racing on one key (whose objects differ:
// each names its own temporary source) cannot leave one's object with another's metadata.
// Compiles run outside the lock. Temporaries of killed compiles are removed once per process.
#include "src/tl/cpu/disk_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "src/tl/cpu/sha256.h"
#include "tileops/core/error.h"

namespace tileops::tl::cpu {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "tileops-tl-cpu 2\n";

// The contents of the file open at `fd` into `out`; false on a read error.
bool read_fd(int fd, std::string& out) {
  out.clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
}

// Opens a regular file of this user without following a symbolic link; -1 otherwise.
int open_own_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A name no other thread or process uses: <key>.tmp.<pid>.<n>.
fs::path temporary(const fs::path& dir, const std::string& key) {
  static std::atomic<std::uint64_t> counter{0};
  return dir / (key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter));
}

// False (and no file left behind) when `target` cannot be replaced, e.g. it is a directory.
bool write_atomically(const fs::path& dir, const std::string& key, const fs::path& target,
                      std::string_view text) {
  const fs::path tmp = temporary(dir, key);
  std::error_code ec;
  if (write_file(tmp, text)) fs::rename(tmp, target, ec);
  if (ec || fs::exists(tmp, ec)) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

// An exclusive lock on dir/.lock across threads and processes (each holder opens the file, so
// threads exclude one another too), released when it goes out of scope. Without the file (a
// read-only directory) it locks nothing: nothing can be committed there either.
class CacheLock {
 public:
  explicit CacheLock(const fs::path& dir)
      : fd_(::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) {
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

// Removes <key>.tmp.<pid>.* files left by compiles that died: their process is gone, or they
// are a day old (a pid may be reused). Ten minutes' grace: a process in another pid namespace
// sharing the directory may still be compiling.
void remove_stale_temporaries(const fs::path& dir) {
  static std::mutex mutex;
  static std::set<std::string> cleaned;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!cleaned.insert(dir.string()).second) return;
  }
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t at = name.find(".tmp.");
    if (at == std::string::npos) continue;
    long long pid = 0;  // not a number: treated as a dead writer's file
    std::from_chars(name.data() + at + 5, name.data() + name.size(), pid);
    std::error_code time_ec;
    const auto age = now - fs::last_write_time(it->path(), time_ec);
    if (time_ec || age < std::chrono::minutes(10)) continue;
    const bool dead = pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
    if (dead || age > std::chrono::hours(24)) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

}  // namespace

bool write_file(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      errno = error;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return ::close(fd) == 0;
}

std::string digest(const std::string& text) { return sha256_hex(text); }

std::string entry_metadata(std::string_view key, std::string_view object_bytes) {
  std::string m(kMagic);
  m += "key ";
  m += key;
  m += "\nsize " + std::to_string(object_bytes.size()) + "\nsha256 " + sha256_hex(object_bytes) +
       "\n";
  return m;
}

bool entry_metadata_matches(std::string_view metadata, std::string_view key,
                            std::string_view object_bytes) {
  // Cheap refusals first: the format, the key, the size; then the digest of the bytes.
  if (metadata.size() > 4096 || !metadata.starts_with(kMagic)) return false;
  if (object_bytes.size() < 4 || object_bytes.substr(0, 4) !=
                                     "\x7f"
                                     "ELF")
    return false;
  const std::string expected_head = std::string(kMagic) + "key " + std::string(key) + "\nsize " +
                                    std::to_string(object_bytes.size()) + "\n";
  if (!metadata.starts_with(expected_head)) return false;
  return metadata == entry_metadata(key, object_bytes);
}

CacheEntry::CacheEntry(std::string path, int fd, std::string bytes, bool cached)
    : path_(std::move(path)), fd_(fd), bytes_(std::move(bytes)), cached_(cached) {}

CacheEntry::~CacheEntry() {
  if (fd_ >= 0) ::close(fd_);
}

CacheEntry::CacheEntry(CacheEntry&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      bytes_(std::move(other.bytes_)),
      cached_(other.cached_) {}

CacheEntry& CacheEntry::operator=(CacheEntry&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    bytes_ = std::move(other.bytes_);
    cached_ = other.cached_;
  }
  return *this;
}

int CacheEntry::release() { return std::exchange(fd_, -1); }

CacheEntry find_or_build(const std::string& key, bool always_compile,
                         const std::function<void(const std::string& path)>& build) {
  const fs::path dir = cache_dir();
  remove_stale_temporaries(dir);
  const fs::path object = dir / (key + ".so");
  const fs::path meta = dir / (key + ".meta");
  if (!always_compile) {
    const CacheLock lock(dir);
    std::string metadata, bytes;
    const int meta_fd = open_own_file(meta);
    const bool have_meta = meta_fd >= 0 && read_fd(meta_fd, metadata);
    if (meta_fd >= 0) ::close(meta_fd);
    if (have_meta) {
      const int fd = open_own_file(object);
      if (fd >= 0 && read_fd(fd, bytes) && entry_metadata_matches(metadata, key, bytes)) {
        return CacheEntry(object.string(), fd, std::move(bytes), true);
      }
      if (fd >= 0) ::close(fd);
    }
  }
  const fs::path tmp = temporary(dir, key).string() + ".so";
  build(tmp.string());
  std::string bytes;
  const int fd = open_own_file(tmp);
  if (fd < 0 || !read_fd(fd, bytes)) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(ErrorKind::kCompileError, "tl cpu backend: cannot read the compiled kernel " +
                                              tmp.string() + " (" + std::strerror(error) + ")");
  }
  CacheEntry built(tmp.string(), fd, std::move(bytes), false);
  std::error_code ec;
  if (!always_compile) {
    const CacheLock lock(dir);
    fs::rename(tmp, object, ec);  // atomic: a process loading it keeps its copy
    // Something that is not ours to replace (a directory) holds the entry's name: this build is
    // loaded uncached. Without its metadata the entry is rebuilt next time.
    if (!ec) {
      write_atomically(dir, key, meta, entry_metadata(key, built.bytes()));
      return CacheEntry(object.string(), built.release(), std::string(built.bytes()), false);
    }
  }
  fs::remove(tmp, ec);  // loaded through the descriptor
  return built;
}

void discard(const std::string& key) {
  const fs::path dir = cache_dir();
  const CacheLock lock(dir);
  std::error_code ignored;
  fs::remove(dir / (key + ".meta"), ignored);
  fs::remove(dir / (key + ".so"), ignored);
}

}  // namespace tileops::tl::cpu
