// Running the system C++ compiler (see compiler.h). A compile runs as an argv, without a shell
// (asc2's bisheng_options reach it as arguments, never as shell text), with its output
// redirected to a file next to the object, so that a failure can be reported verbatim.
#include "src/tl/cpu/compiler.h"

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/knobs.h"

extern char** environ;  // NOLINT: POSIX declares it only here

namespace tileops::tl::cpu {
namespace {

std::atomic<std::int64_t> g_compiles{0};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string run_capture(const std::string& command, int* status = nullptr) {
  std::string out;
  int result = -1;
  // The command is ours: a compiler path and quote()d file names.
  if (FILE* p = popen(command.c_str(), "r")) {  // NOLINT(bugprone-command-processor)
    char buf[512];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    result = pclose(p);
  }
  if (status != nullptr) *status = result;
  return out;
}

// Runs `argv` (argv[0] looked up on PATH) with stdout and stderr into `log`, no shell between:
// each argument reaches the program as given. The exit status, or -1 when it did not run or died.
int run_argv(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::optional<std::string> lookup() {
  if (std::optional<std::string> cxx = knob("TILEOPS_CXX")) {
    if (cxx->empty()) return std::nullopt;  // TILEOPS_CXX= disables the cpu backend
    return cxx;
  }
  std::stringstream dirs(knob("PATH").value_or("/usr/bin:/bin"));
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::filesystem::path candidate = std::filesystem::path(dir) / "c++";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

// glibc's vector math library has every function the runtime declares from 2.35 on (x86-64).
bool have_libmvec() {
#if defined(__x86_64__)
  const char* const version = gnu_get_libc_version();  // "2.36"
  const char* const end = version + std::strlen(version);
  int major = 0, minor = 0;
  const auto [dot, major_error] = std::from_chars(version, end, major);
  if (major_error != std::errc{} || dot == end || *dot != '.') return false;
  if (std::from_chars(dot + 1, end, minor).ec != std::errc{}) return false;
  return major > 2 || (major == 2 && minor >= 35);
#else
  return false;
#endif
}

// -mno- flags for the instruction sets that -march=native may enable (the compiler asks CPUID
// itself, natively) but that this process's CPUID does not report. Kernels run in this process:
// under valgrind, which emulates a CPU without AVX-512, native kernels died of SIGILL.
const std::string& unreported_isa_flags() {
  static const std::string flags = [] {
    std::string f;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) f += " -mno-avx512f";  // and every AVX-512 subset
    if (!__builtin_cpu_supports("avx2")) f += " -mno-avx2";
    if (!__builtin_cpu_supports("avx")) f += " -mno-avx";
    if (!__builtin_cpu_supports("fma")) f += " -mno-fma";
    if (!__builtin_cpu_supports("bmi2")) f += " -mno-bmi2";
    if (!__builtin_cpu_supports("gfni")) f += " -mno-gfni";
    if (!__builtin_cpu_supports("vpclmulqdq")) f += " -mno-vpclmulqdq";
    unsigned a = 0, b = 0, c = 0, d = 0;  // names clang 14's __builtin_cpu_supports lacks
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (c >> 9 & 1u) == 0) f += " -mno-vaes";
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) == 0 || (a >> 4 & 1u) == 0) f += " -mno-avxvnni";
#endif
    return f;
  }();
  return flags;
}

// The instruction-set macros (__AVX2__, __AMX_TILE__, ...) the compiler defines for `march`
// plus `extra` flags; `status` is the compiler's exit status. Only the families a compiler emits
// from ordinary code or the runtime's intrinsics count: a VM hiding, say, SGX or RDSEED from
// CPUID must not make its own CPU model unusable.
std::set<std::string> isa_macros(const std::string& compiler, const std::string& march,
                                 const std::string& extra, std::string& output, int& status) {
  output = run_capture(
      quote(compiler) + " -march=" + quote(march) + extra + " -dM -E -x c++ /dev/null 2>&1",
      &status);
  static constexpr const char* kFamilies[] = {
      "__SSE",      "__AVX",      "__FMA",   "__F16C__",      "__BMI",    "__LZCNT__",
      "__POPCNT__", "__MOVBE",    "__AMX",   "__GFNI__",      "__VAES__", "__XOP__",
      "__AES__",    "__PCLMUL__", "__SHA__", "__VPCLMULQDQ__"};
  std::set<std::string> macros;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("#define __", 0) != 0) continue;
    const std::string name = line.substr(8, line.find(' ', 8) - 8);
    if (name.find("_MATH__") != std::string::npos) continue;  // __SSE2_MATH__: FP evaluation
    for (const char* family : kFamilies) {
      if (name.rfind(family, 0) == 0) macros.insert(name);
    }
  }
  return macros;
}

// "" when code for `target` runs on this CPU, else the error (kind in `kind`).
std::string target_problem(const std::string& target, ErrorKind& kind) {
  kind = ErrorKind::kInvalidArgument;
  if (!tl::detail::valid_target_name(target)) {
    return "is not a target name (letters, digits, '.', '_', '+', '-'; at most 64)";
  }
  const std::optional<std::string>& compiler = find_compiler();
  if (target == "native" || !compiler) return "";
  std::string output;
  int status = 0;
  const std::set<std::string> wanted = isa_macros(*compiler, target, "", output, status);
  if (status != 0) {
    // As any failed compile (the C API's TILEOPS_COMPILE_ERROR), with the compiler's words.
    kind = ErrorKind::kCompileError;
    if (output.size() > 2000) output.resize(2000);
    return "the compiler rejects -march=" + target + ":\n" + output;
  }
#if defined(__x86_64__)
  // What this process may run: the compiler's view of this CPU less what CPUID hides from us.
  const std::set<std::string> have =
      isa_macros(*compiler, "native", unreported_isa_flags(), output, status);
  std::string missing;
  for (const std::string& m : wanted) {
    if (have.count(m) != 0) continue;
    if (!missing.empty()) missing += ", ";
    missing.append(m, 2, m.size() - 4);  // AVX512ER for __AVX512ER__
  }
  if (status == 0 && !missing.empty()) {
    kind = ErrorKind::kUnsupported;
    return "needs instruction sets this CPU lacks (" + missing +
           "): its kernels would die of SIGILL; use target 'native' or a CPU this one can stand "
           "in for";
  }
#endif
  return "";
}

}  // namespace

std::string resolve_target(const Options& options) {
  if (!options.target.empty()) return options.target;
  const std::optional<std::string> env = knob("TILEOPS_TL_TARGET");  // read per compile
  if (env && !env->empty()) return *env;
  // Generated code follows a forced TILEOPS_SIMD_TARGET (which throws when unusable).
  switch (simd_target().target) {
    case SimdTarget::kAvx2:
      return "haswell";
    case SimdTarget::kSse4:
      return "x86-64-v2";
    case SimdTarget::kScalar:
#if defined(__x86_64__)
      return "x86-64";
#else
      break;
#endif
    case SimdTarget::kNative:
    case SimdTarget::kAvx512:
      break;
  }
  return "native";
}

void check_target(const std::string& target, const std::string& kernel) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<ErrorKind, std::string>> checked;
  std::pair<ErrorKind, std::string> result;
  {
    const std::lock_guard<std::mutex> lock(mutex);  // held while the compiler runs: once a target
    auto it = checked.find(target);
    if (it == checked.end()) {
      ErrorKind kind{};
      std::string problem = target_problem(target, kind);
      it = checked.emplace(target, std::make_pair(kind, std::move(problem))).first;
    }
    result = it->second;
  }
  if (!result.second.empty()) {
    throw Error(result.first,
                "tl: kernel '" + kernel + "': cpu target '" + target +
                    "' (the target option, else $TILEOPS_TL_TARGET, else $TILEOPS_SIMD_TARGET) " +
                    result.second);
  }
}

const std::optional<std::string>& find_compiler() {
  static const std::optional<std::string> compiler = lookup();
  return compiler;
}

const std::string& compiler_identity() {
  static const std::string identity = [] {
    const auto& cc = find_compiler();
    return cc ? *cc + "\n" + run_capture(quote(*cc) + " --version 2>&1") : std::string();
  }();
  return identity;
}

const std::string& cpu_identity() {
  static const std::string identity = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
    }
    return model + "\n" + flags;
  }();
  return identity;
}

// The compiler arguments `options` select, one argv entry each: ours, then options.compiler_args
// (asc2's bisheng_options) so that the user's can override ours.
std::vector<std::string> compile_arguments(const Options& options) {
  std::string flags = "-std=c++17 -fPIC -shared -w -fno-exceptions -fno-rtti";
  flags += options.opt_level == 1 ? " -O1" : " -O3";
  if (options.opt_level == 3) flags += " -funroll-loops";
  const std::string target = resolve_target(options);
  if (target == "native") {
    flags += " -march=native" + unreported_isa_flags();
  } else {
    flags += " -march=" + target;  // a valid_target_name: no spaces, nothing to quote
  }
  // Exactly the interpreter's rounding unless fast_math: no contraction into FMAs. Neither errno
  // nor FP exception flags are observable in a kernel, and ignoring them lets loops vectorise.
  // fast_math takes some of -ffast-math's parts, not -ffast-math itself: that links
  // crtfastmath.o, whose constructor switches on flush-to-zero in the thread that loads the kernel
  // (and the threads it starts). Not -ffinite-math-only (kernels mask with -inf and test for NaN)
  // nor -fassociative-math: it folds the runtime's exact scalings (float16 rounding turned 98256
  // into NaN), and the generated reductions are lane-parallel already.
  flags += " -fno-math-errno -fno-trapping-math";
  // Copy and fill loops stay inline loops. As calls, glibc's memcpy copies a 4 KiB tile with
  // `rep movsb`, which on AMD Zen 3 ran the float32 softmax 3x slower when the two addresses
  // happened to be close modulo 4 KiB.
  static const bool clang = compiler_identity().find("clang") != std::string::npos;
  flags += clang ? " -fno-builtin-memcpy -fno-builtin-memmove -fno-builtin-memset"
                 : " -fno-tree-loop-distribute-patterns";
  if (options.fast_math) {
    flags += " -ffp-contract=fast -fno-signed-zeros -freciprocal-math -DTL_FAST_MATH=1";
    if (!clang) flags += " -fcx-limited-range";  // clang 14 rejects it; kernels have no complex
  } else {
    flags += " -ffp-contract=off";
  }
  if (options.debug) flags += " -g";
  static const bool libmvec = have_libmvec();
  if (libmvec) flags += " -DTL_LIBMVEC=1";
  std::vector<std::string> arguments;  // our flags are space-free tokens
  std::istringstream tokens(flags);
  for (std::string token; tokens >> token;) arguments.push_back(token);
  arguments.insert(arguments.end(), options.compiler_args.begin(), options.compiler_args.end());
  return arguments;
}

std::string compile_flags(const Options& options) {
  std::string flags;
  for (const std::string& a : compile_arguments(options)) {
    if (!flags.empty()) flags += ' ';
    flags += quote(a);  // quoted: the text keys the disk cache, and two lists never read alike
  }
  return flags;
}

std::string compile(const std::string& source_path, const std::string& output_path,
                    const Options& options) {
  const auto& cc = find_compiler();
  if (!cc) return "no C++ compiler found";
  ++g_compiles;
  const std::string log = output_path + ".log";
  std::vector<std::string> argv = {*cc};
  for (std::string& a : compile_arguments(options)) argv.push_back(std::move(a));
  argv.insert(argv.end(), {"-o", output_path, source_path});
  if (have_libmvec()) argv.emplace_back("-lmvec");
  const int status = run_argv(argv, log);
  std::ostringstream messages;
  messages << std::ifstream(log).rdbuf();
  std::error_code ignored;
  std::filesystem::remove(log, ignored);
  if (status == 0 && std::filesystem::exists(output_path)) return "";
  std::string command;
  for (const std::string& a : argv) {
    if (!command.empty()) command += ' ';
    command += quote(a);
  }
  return "`" + command + "` failed (status " + std::to_string(status) + "):\n" + messages.str();
}

std::int64_t compile_count() { return g_compiles.load(); }

}  // namespace tileops::tl::cpu

namespace tileops::tl {

std::int64_t cpu_compile_count() { return cpu::compile_count(); }

}  // namespace tileops::tl
