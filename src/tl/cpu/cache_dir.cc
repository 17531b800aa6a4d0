// Where the JIT cache lives, and the checks that keep it private (see disk_cache.h). Every path
// component the cache creates is made 0700 and then checked with lstat: owned by this user, a
// real directory (a symbolic link could point anywhere), not writable by group or others.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "src/tl/cpu/disk_cache.h"
#include "tileops/core/error.h"
#include "tileops/runtime/knobs.h"

namespace tileops::tl::cpu {
namespace {

namespace fs = std::filesystem;

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "0%03o", static_cast<unsigned>(mode & 0777));
  return text;
}

// "" when `dir` exists (or was made 0700) and is private, else why it is not. `created` tells
// whether it could not be created at all (as opposed to existing in a form we refuse).
std::string make_private(const fs::path& dir, bool& uncreatable) {
  uncreatable = false;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    uncreatable = true;
    return std::strerror(errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISLNK(st.st_mode)) {
    return "it is a symbolic link (name the real directory instead)";
  }
  if (!S_ISDIR(st.st_mode)) {
    uncreatable = true;
    return "it is not a directory";
  }
  if (st.st_uid != ::geteuid()) {
    return "it is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(::geteuid()) + ")";
  }
  if ((st.st_mode & 022) != 0) {
    return "it is writable by group or others (mode " + octal(st.st_mode) + ")";
  }
  return "";
}

// `base` and base/cpu made private, or why not.
std::string prepare(const fs::path& base, bool& uncreatable) {
  std::error_code ec;
  if (base.has_parent_path()) fs::create_directories(base.parent_path(), ec);
  if (std::string why = make_private(base, uncreatable); !why.empty()) {
    return base.string() + ": " + why;
  }
  if (std::string why = make_private(base / "cpu", uncreatable); !why.empty()) {
    return (base / "cpu").string() + ": " + why;
  }
  return "";
}

// The per-process fallback: a fresh mkdtemp directory, removed at exit by the process that made
// it (not by forked children). Callers hold cache_dir's mutex.
const fs::path& process_dir(const std::string& reason) {
  // Never destroyed: the exit handler that removes it runs after static destructors would.
  static const fs::path* dir = nullptr;
  static pid_t owner = 0;
  if (dir != nullptr) return *dir;
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  std::string pattern = (tmp / "tileops-cache-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorKind::kCompileError, "tl cpu backend: no JIT cache directory (" + reason +
                                              ") and no private temporary one (" +
                                              std::strerror(errno) +
                                              "); set TILEOPS_CACHE_DIR to a private directory");
  }
  ::mkdir((fs::path(pattern) / "cpu").c_str(), 0700);
  dir = new fs::path(pattern);
  owner = ::getpid();
  std::atexit([] {
    std::error_code ignored;
    if (::getpid() == owner) fs::remove_all(*dir, ignored);
  });
  std::fprintf(stderr,
               "tileops: %s; compiled tile-language kernels are kept in %s for this process "
               "only (set TILEOPS_CACHE_DIR to a private directory to keep them)\n",
               reason.c_str(), pattern.c_str());
  return *dir;
}

}  // namespace

fs::path cache_dir() {
  bool uncreatable = false;
  if (const std::optional<std::string> env = knob("TILEOPS_CACHE_DIR"); env && !env->empty()) {
    // Named by the user: used as it is, or refused.
    if (std::string why = prepare(*env, uncreatable); !why.empty()) {
      // The kernel cannot be built, as when the compiler fails (C API: TILEOPS_COMPILE_ERROR).
      throw Error(ErrorKind::kCompileError,
                  std::string("tl cpu backend: ") +
                      (uncreatable ? "cannot create the JIT cache directory "
                                   : "refusing the JIT cache directory ") +
                      why + "; set TILEOPS_CACHE_DIR to a private directory of this user");
    }
    return fs::path(*env) / "cpu";
  }
  std::string reason = "HOME is unset and TILEOPS_CACHE_DIR is not set";
  if (const std::optional<std::string> home = knob("HOME"); home && !home->empty()) {
    const fs::path base = fs::path(*home) / ".cache" / "tileops";
    std::string why = prepare(base, uncreatable);
    if (why.empty()) return base / "cpu";
    if (!uncreatable) {  // someone else's, or shared: never fall back silently past it
      throw Error(ErrorKind::kCompileError,
                  "tl cpu backend: refusing the JIT cache directory " + why +
                      "; make it private (chmod 700, owned by this user) or set "
                      "TILEOPS_CACHE_DIR to a private directory");
    }
    reason = "cannot create the JIT cache directory " + why;
  }
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  return process_dir(reason) / "cpu";
}

}  // namespace tileops::tl::cpu
