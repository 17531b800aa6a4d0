// The cpu backend behind the jit's Executable interface: generate C++ for the Function, find or
// build its shared object in the persistent cache, dlopen it, and run blocks on the runtime
// thread pool. Everything the generated code cannot do inline (8-bit float formats, non-default
// float cast rounding, atomics) calls back into the interpreter's element functions through
// TlRt, so both backends share one definition of those semantics.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "src/tl/cpu/codegen.h"
#include "src/tl/cpu/compiler.h"
#include "src/tl/cpu/disk_cache.h"
#include "src/tl/cpu/runtime_source.h"
#include "src/tl/interp/buffer.h"
#include "src/tl/jit/executable.h"
#include "src/tl/verify/infer.h"
#include "tileops/core/error.h"
#include "tileops/core/scalar.h"
#include "tileops/runtime/thread_pool.h"

#ifndef TILEOPS_VERSION
#define TILEOPS_VERSION "unknown"
#endif

namespace tileops::tl {
namespace {

// Must match `union TlArg` and `struct TlRt` in tl_runtime.h.
union TlArg {
  void* p;
  std::int64_t i;
  double f;
};
struct TlRt {
  double (*read)(const void* element, int dtype);
  void (*write)(double value, void* element, int dtype);
  double (*round)(int dtype, double value);
  void (*atomic)(int op, int dtype, void* element, double fvalue, std::int64_t ivalue);
  double (*cast)(double value, int to_dtype, int round_mode);
};
using KernelFn = int (*)(std::int64_t, std::int64_t, const TlArg*, const TlRt*);

DataType dt(int d) { return static_cast<DataType>(d); }

std::mutex& atomic_mutex() {
  static std::mutex m;
  return m;
}

void rt_atomic(int op, int dtype, void* element, double fvalue, std::int64_t ivalue) {
  const std::lock_guard<std::mutex> lock(atomic_mutex());
  const auto kind = static_cast<AtomicOp>(op);
  interp::Buffer cell;
  cell.resize(dt(dtype), {});
  if (is_floating(dt(dtype))) {
    const double old = read_as_double(element, dt(dtype));
    cell.set(0, kind == AtomicOp::kAdd
                    ? old + fvalue
                    : (kind == AtomicOp::kMax ? std::max(old, fvalue) : std::min(old, fvalue)));
    write_from_double(cell.f[0], element, dt(dtype));
  } else {
    const std::int64_t old = read_as_int64(element, dt(dtype));
    cell.set_int(0, kind == AtomicOp::kAdd
                        ? static_cast<std::int64_t>(static_cast<std::uint64_t>(old) +
                                                    static_cast<std::uint64_t>(ivalue))
                        : (kind == AtomicOp::kMax ? std::max(old, ivalue) : std::min(old, ivalue)));
    write_from_int64(cell.i[0], element, dt(dtype));
  }
}

const TlRt kRuntime = {
    [](const void* e, int d) { return read_as_double(e, dt(d)); },
    [](double v, void* e, int d) { write_from_double(v, e, dt(d)); },
    [](int d, double v) { return interp::round_to(dt(d), v); },
    rt_atomic,
    [](double v, int to, int mode) {
      interp::Buffer from, out;
      from.resize(DataType::kFloat64, {});
      from.f[0] = v;
      out.resize(dt(to), {});
      interp::cast_element(from, 0, out, 0, static_cast<RoundMode>(mode));
      return out.f[0];
    },
};

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(void* handle, int fd, KernelFn fn, std::vector<cpu::RuntimeCheck> checks,
                std::vector<ParamKind> params)
      : handle_(handle), fd_(fd), fn_(fn), checks_(std::move(checks)), params_(std::move(params)) {}
  ~CpuExecutable() override {
    dlclose(handle_);
    if (fd_ >= 0) ::close(fd_);
  }
  CpuExecutable(const CpuExecutable&) = delete;
  CpuExecutable& operator=(const CpuExecutable&) = delete;

  std::int64_t all_cores(const ThreadPool& pool) const override { return pool.num_threads(); }

  void launch(std::int64_t num_blocks, std::span<const Argument> args,
              ThreadPool& pool) const override {
    TlArg small[16];
    std::vector<TlArg> large;
    TlArg* converted = small;
    if (args.size() > 16) {
      large.resize(args.size());
      converted = large.data();
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Argument& a = args[i];
      switch (params_[i]) {
        case ParamKind::kGlobalAddress:
          converted[i].p = std::get<Pointer>(a).data;
          break;
        case ParamKind::kInt:
          converted[i].i = std::get<std::int64_t>(a);
          break;
        case ParamKind::kFloat:
          converted[i].f = std::holds_alternative<double>(a)
                               ? std::get<double>(a)
                               : static_cast<double>(std::get<std::int64_t>(a));
          break;
        case ParamKind::kBool:
          converted[i].i = std::get<bool>(a) ? 1 : 0;
          break;
      }
    }
    auto run = [&](std::int64_t block) {
      const int status = fn_(block, num_blocks, converted, &kRuntime);
      if (status != 0) {
        const cpu::RuntimeCheck& check = checks_.at(static_cast<std::size_t>(status - 1));
        trace_error(ErrorKind::kInvalidArgument, check.loc, check.what, check.message);
      }
    };
    if (num_blocks == 1) {
      run(0);
    } else {
      pool.parallel_for(num_blocks, run);
    }
  }

 private:
  void* handle_;
  int fd_;  // the loaded file: open while loaded, so that its /proc/self/fd name stays unique
  KernelFn fn_;
  std::vector<cpu::RuntimeCheck> checks_;
  std::vector<ParamKind> params_;
};

// The handle of the object `entry` verified, loaded through its descriptor so that the loader
// maps the very file that was checked (by path when /proc is not mounted). Keeps the descriptor
// open in `fd` while loaded. nullptr and `error` set when it does not load.
void* load(cpu::CacheEntry& entry, int& fd, std::string& error) {
  const int original = entry.fd();
  int used = original;
  std::vector<int> copies;  // descriptor numbers tried after the original
  std::string path = "/proc/self/fd/" + std::to_string(used);
  if (::access(path.c_str(), R_OK) != 0) path = entry.path();
  // glibc finds loaded objects by name first: one still loaded under this name (left resident,
  // its descriptor closed since) would be returned instead. Then the path is used instead; a
  // fresh build has none (it is unlinked once open), so a copy of its descriptor under another
  // number gives it a fresh name.
  if (void* stale = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(stale);
    path = entry.path();
    bool named = ::access(path.c_str(), F_OK) == 0;
    for (int tries = 0; !named && tries < 64; ++tries) {
      const int copy = ::fcntl(original, F_DUPFD_CLOEXEC, used + 1);
      if (copy < 0) break;
      copies.push_back(copy);
      used = copy;
      path = "/proc/self/fd/" + std::to_string(used);
      void* taken = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
      named = taken == nullptr;
      if (taken != nullptr) dlclose(taken);
    }
    if (!named) {
      for (const int copy : copies) ::close(copy);
      fd = original;
      error = "no name to load it under (an older object holds each)";
      return nullptr;
    }
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  for (const int copy : copies) {
    if (copy != used || handle == nullptr) ::close(copy);
  }
  fd = original;
  if (handle == nullptr) {
    const char* message = dlerror();
    error = message != nullptr ? message : "dlopen failed";
    return nullptr;
  }
  if (used != original) {
    ::close(entry.release());  // the copy whose name the loader holds stays open instead
    fd = used;
  } else {
    fd = entry.release();
  }
  return handle;
}

}  // namespace

std::shared_ptr<const Executable> make_cpu_executable(const Function& function,
                                                      const Options& options,
                                                      const std::string& kernel_name) {
  cpu::check_target(cpu::resolve_target(options), kernel_name);  // before anything runs
  const cpu::GeneratedSource source = cpu::generate(function);
  const std::string ir = print(function, false);
  char ir_hash[17];
  std::snprintf(ir_hash, sizeof(ir_hash), "%016llx",
                static_cast<unsigned long long>(hash_ir(function)));
  // Everything the object depends on; options that do not change the code are left out.
  const std::string key = cpu::digest(std::string("tileops ") + TILEOPS_VERSION + "\n" +
                                      cpu::compiler_identity() + "\n" + cpu::cpu_identity() + "\n" +
                                      cpu::compile_flags(options) + "\n" + ir + "\n" + source.text);
  const std::string stem = file_stem(kernel_name) + "-" + ir_hash;
  if (!options.dump_dir.empty()) write_dump(options.dump_dir, stem + ".cc", source.text);
  const auto build = [&](const std::string& object) {
    // With a dump_dir the dumped source is compiled (debug info names it), else a temporary.
    const bool temporary = options.dump_dir.empty();
    const std::string src =
        temporary ? object + ".cc"
                  : (std::filesystem::path(options.dump_dir) / (stem + ".cc")).string();
    if (temporary && !cpu::write_file(src, source.text)) {
      const std::string cause = std::strerror(errno);
      throw Error(ErrorKind::kCompileError,
                  "tl: kernel '" + kernel_name + "': cannot write its source " + src + " (" +
                      cause + "); the JIT cache directory " +
                      std::filesystem::path(object).parent_path().string() +
                      " must be writable (or set TILEOPS_CACHE_DIR)");
    }
    const std::string messages = cpu::compile(src, object, options);
    std::error_code ec;
    if (messages.empty()) {
      if (temporary) std::filesystem::remove(src, ec);
      return;
    }
    std::string kept = src;  // kept for the user, under a stable name when it can be
    if (temporary) {
      const std::filesystem::path stable = cpu::cache_dir() / (stem + ".failed.cc");
      std::filesystem::rename(src, stable, ec);
      if (!ec) kept = stable.string();
    }
    throw Error(ErrorKind::kCompileError, "tl: kernel '" + kernel_name +
                                              "': the cpu backend failed to compile " + kept +
                                              "\n" + messages);
  };
  // A cached entry that matches its metadata but does not load (garbage that was given metadata,
  // an object for another system) is discarded and built once more.
  void* handle = nullptr;
  int fd = -1;
  KernelFn fn = nullptr;
  std::string bytes;
  for (int attempt = 0; fn == nullptr; ++attempt) {
    cpu::CacheEntry entry = cpu::find_or_build(key, options.always_compile, build);
    std::string error;
    handle = load(entry, fd, error);
    if (handle != nullptr) {
      fn = reinterpret_cast<KernelFn>(dlsym(handle, "tl_kernel"));
      if (fn == nullptr) {
        error = "it has no tl_kernel";
        dlclose(handle);
        ::close(fd);
      }
    }
    if (fn != nullptr) {
      if (!options.dump_dir.empty()) bytes = entry.bytes();
    } else if (!entry.cached() || attempt > 0) {
      std::string message = "tl: kernel '" + kernel_name + "': cannot load ";
      message.append(entry.path()).append(": ").append(error);
      throw Error(ErrorKind::kCompileError, message);
    } else {
      cpu::discard(key);
    }
  }
  std::vector<ParamKind> params;
  for (const Param& p : function.params) params.push_back(p.kind);
  auto executable =
      std::make_shared<const CpuExecutable>(handle, fd, fn, source.checks, std::move(params));
  if (!options.dump_dir.empty()) write_dump(options.dump_dir, stem + ".so", bytes);
  return executable;
}

}  // namespace tileops::tl
