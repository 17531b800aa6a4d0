// `tileops env [--json] [-o FILE]`: the build, the CPU as the kernels see it, every registered
// implementation, and what a kernel author needs (seed 002's phase 0): a C++ compiler that
// builds a tiny tl kernel through the real JIT path, a private JIT cache, the Python with
// numpy/pytest (torch optional), and the backends that work. Status 1 names each missing piece
// and its fix; --json writes the same facts as environment.json.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "examples/llama/demo.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/cpu/simd/packed_linear_kernels.h"
#include "src/tl/cpu/compiler.h"
#include "src/tl/cpu/disk_cache.h"
#include "tileops/core/error.h"
#include "tileops/ops/packed_linear.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/knobs.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/tl.h"
#include "tools/cli/commands.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX names it nowhere else

namespace tileops::cli {
namespace {

namespace fs = std::filesystem;

struct Problem {
  std::string what;
  std::string fix;
};

struct Probe {
  bool ok = false;
  std::string detail;  // the error when !ok
  double seconds = 0;
};

// y = x + 1 on a partial 16-lane tile, launched on `backend` with always_compile (a real compile
// on cpu, never a cache hit).
Probe probe_backend(const std::string& backend) {
  tl::Options options;
  options.backend = backend;
  options.always_compile = true;
  const auto start = std::chrono::steady_clock::now();
  Probe probe;
  try {
    const tl::Kernel k = tl::jit(
        "env_probe",
        [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int n) {
          const tl::Value tx = tl::tensor(x, {n});
          tl::store(tl::load(tx, {16}, {0}) + 1.0, tl::tensor(y, {n}), {0});
        },
        options);
    std::vector<float> x = {0.5F, -2.0F, 3.25F, 7.0F, -0.0F, 1e3F, 2.0F, -9.5F, 4.0F, 0.125F};
    std::vector<float> y(x.size(), std::nanf(""));
    k.launch(1, x.data(), y.data(), static_cast<std::int64_t>(x.size()));
    probe.ok = true;
    for (std::size_t i = 0; i < x.size(); ++i) probe.ok = probe.ok && y[i] == x[i] + 1.0F;
    if (!probe.ok) probe.detail = "the probe kernel computed a wrong result";
  } catch (const std::exception& e) {
    probe.detail = llama::one_line(e.what());
  }
  probe.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return probe;
}

struct CacheFacts {
  std::string path;
  std::string error;  // why it is refused or not writable
};

CacheFacts probe_cache() {
  CacheFacts facts;
  try {
    const fs::path dir = tl::cpu::cache_dir();  // made private (0700, ours) or refused
    facts.path = dir.parent_path().string();
    const fs::path probe = dir / (".env-probe-" + std::to_string(::getpid()));
    std::ofstream(probe) << "probe";
    std::error_code ec;
    if (!fs::exists(probe, ec)) facts.error = dir.string() + " is not writable";
    fs::remove(probe, ec);
  } catch (const std::exception& e) {
    facts.error = llama::one_line(e.what());
  }
  return facts;
}

// The Python the Python-side commands run: $TILEOPS_PYTHON, else the build's (CMake's
// TILEOPS_PYTHON), else python3 on PATH.
std::string python_executable() {
  if (std::optional<std::string> env = knob("TILEOPS_PYTHON"); env && !env->empty()) return *env;
#ifdef TILEOPS_PYTHON_EXECUTABLE
  return TILEOPS_PYTHON_EXECUTABLE;
#else
  return "python3";
#endif
}

// `name version` lines from the Python (version "-" when a module is missing); empty when the
// interpreter does not run. Spawned with an argv, never through a shell.
std::map<std::string, std::string> probe_python(const std::string& python) {
  static const char* const kScript =
      "import platform\n"
      "print('python', platform.python_version())\n"
      "for m in ('numpy', 'pytest'):\n"
      "    try:\n"
      "        print(m, __import__(m).__version__)\n"
      "    except Exception:\n"
      "        print(m, '-')\n"
      "try:\n"  // torch is optional: its metadata, not a 3-second import
      "    from importlib import metadata\n"
      "    print('torch', metadata.version('torch'))\n"
      "except Exception:\n"
      "    print('torch', '-')\n";
  std::map<std::string, std::string> found;
  int fds[2];
  if (::pipe(fds) != 0) return found;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string program = python, flag = "-c", script = kScript;
  char* argv[] = {program.data(), flag.data(), script.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n = 0; spawned == 0 && (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (spawned != 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return {};
  }
  std::size_t begin = 0;
  while (begin < out.size()) {
    std::size_t end = out.find('\n', begin);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(begin, end - begin);
    if (const std::size_t space = line.find(' '); space != std::string::npos) {
      found[line.substr(0, space)] = line.substr(space + 1);
    }
    begin = end + 1;
  }
  return found;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(c));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string version_or_null(const std::map<std::string, std::string>& found,
                            const std::string& name) {
  const auto it = found.find(name);
  return it == found.end() || it->second == "-" ? "null" : quoted(it->second);
}

struct Facts {
  std::string compiler, compiler_version;
  Probe interp, cpu;
  CacheFacts cache;
  std::string python;
  std::map<std::string, std::string> python_versions;
  std::vector<std::string> simd_targets;
  std::string simd_dispatch;
  std::string simd_target;         // TILEOPS_SIMD_TARGET's effective value ("native", "avx2")
  std::string simd_target_reason;  // forced by TILEOPS_SIMD_TARGET, or detected
  std::string simd_target_error;   // the variable's value is unusable (why)
  bool dpbf16 = false;             // bfloat16 products on VDPBF16PS
  bool amx = false;                // bfloat16 products on AMX tiles
  std::int64_t packed_rows = 0;    // linear_packed keeps x's rows as rows up to this M
  int packed_pass = 0;             // float32 x rows per pass of that form
  int datapath_bits = 0;           // cpu_vector_datapath_bits()
  std::string jit_target;          // -march of the cpu backend's kernels
  int threads = 0;
  std::vector<Problem> problems;
};

Facts gather() {
  Facts f;
  f.compiler = tl::cpu::find_compiler().value_or("");
  // "<path>\n<--version output>": the version is the line after the path.
  const std::string& identity = tl::cpu::compiler_identity();
  const std::size_t first = identity.find('\n');
  if (first != std::string::npos) {
    f.compiler_version = identity.substr(first + 1, identity.find('\n', first + 1) - first - 1);
  }
  f.cache = probe_cache();
  f.interp = probe_backend("interp");
  if (!f.compiler.empty()) f.cpu = probe_backend("cpu");
  f.python = python_executable();
  f.python_versions = probe_python(f.python);
  const SimdTargetChoice& choice = simd_target_choice();
  f.simd_target = choice.name;
  f.simd_target_reason = choice.reason;
  try {
    (void)simd_target();
  } catch (const Error& e) {
    f.simd_target_error = e.what();
  }
  f.simd_targets = cpu_simd_targets();
  if (f.simd_target_error.empty()) {
    f.simd_dispatch = simd_dispatched_target();
    f.jit_target = tl::cpu::resolve_target(tl::Options{});
    f.dpbf16 = ops::cpu::dpbf16_enabled();
    f.amx = ops::cpu::amx_bf16_enabled();
    f.packed_rows = ops::cpu::packed_rows_path_max();
    f.packed_pass = ops::cpu::packed_rows_pass_max(DataType::kFloat32);
    f.datapath_bits = cpu_vector_datapath_bits();
  } else {
    f.simd_dispatch = "none";
    f.jit_target = "none";
  }
  f.threads = ThreadPool::global().num_threads();
  auto& p = f.problems;
  if (!f.simd_target_error.empty()) {
    p.push_back({f.simd_target_error, "unset TILEOPS_SIMD_TARGET, or name a target this CPU runs"});
  }
  if (f.compiler.empty()) {
    p.push_back({"no C++ compiler for the cpu backend (c++ on PATH or $TILEOPS_CXX)",
                 "apt-get install g++ (or set TILEOPS_CXX to a C++17 compiler)"});
  } else if (!f.cpu.ok) {
    p.push_back({"the test compile of a tl kernel on the cpu backend failed: " + f.cpu.detail,
                 "check the compiler ($TILEOPS_CXX, " + f.compiler + ") and $TILEOPS_TL_TARGET"});
  }
  if (!f.interp.ok) {
    p.push_back({"the interp backend failed the probe kernel: " + f.interp.detail,
                 "report it as a tileops bug"});
  }
  if (!f.cache.error.empty()) {
    p.push_back({"the JIT cache: " + f.cache.error,
                 "set TILEOPS_CACHE_DIR to a directory of this user with mode 0700"});
  }
  if (f.python_versions.empty()) {
    p.push_back({"the Python '" + f.python + "' does not run",
                 "apt-get install python3, or set TILEOPS_PYTHON to a Python 3"});
  } else {
    for (const char* module : {"numpy", "pytest"}) {
      if (version_or_null(f.python_versions, module) == "null") {
        p.push_back({std::string(module) + " is missing from " + f.python,
                     std::string("apt-get install python3-") + module});
      }
    }
  }
  return f;
}

std::string to_json(const Facts& f) {
  std::string j = "{\n  \"tileops\": " + quoted(version()) + ",\n";
  j += "  \"ok\": " + std::string(f.problems.empty() ? "true" : "false") + ",\n";
  j += "  \"compiler\": {\"path\": " + (f.compiler.empty() ? "null" : quoted(f.compiler)) +
       ", \"version\": " + (f.compiler.empty() ? "null" : quoted(f.compiler_version)) +
       ", \"test_compile\": " + (f.cpu.ok ? "\"ok\"" : "\"failed\"") + "},\n";
  j += "  \"cache\": {\"path\": " + quoted(f.cache.path) +
       ", \"private\": " + (f.cache.error.empty() ? "true" : "false") +
       ", \"writable\": " + (f.cache.error.empty() ? "true" : "false") + "},\n";
  std::string targets;
  for (const std::string& t : f.simd_targets) targets += (targets.empty() ? "" : ", ") + quoted(t);
  j += "  \"cpu\": {\"simd_targets\": [" + targets + "], \"dispatch\": " + quoted(f.simd_dispatch) +
       ", \"jit_target\": " + quoted(f.jit_target) + ", \"threads\": " + std::to_string(f.threads) +
       ", \"amx_bf16\": " + (cpu_amx_bf16() ? "true" : "false") +
       ", \"simd_target\": " + quoted(f.simd_target) +
       ", \"simd_target_reason\": " + quoted(f.simd_target_reason) + ", \"simd_target_error\": " +
       (f.simd_target_error.empty() ? "null" : quoted(f.simd_target_error)) +
       ", \"dpbf16_in_use\": " + (f.dpbf16 ? "true" : "false") +
       ", \"amx_bf16_in_use\": " + (f.amx ? "true" : "false") +
       ", \"vector_datapath_bits\": " + std::to_string(f.datapath_bits) + "},\n";
  j += "  \"python\": {\"executable\": " + quoted(f.python) +
       ", \"version\": " + version_or_null(f.python_versions, "python") +
       ", \"numpy\": " + version_or_null(f.python_versions, "numpy") +
       ", \"torch\": " + version_or_null(f.python_versions, "torch") +
       ", \"pytest\": " + version_or_null(f.python_versions, "pytest") + "},\n";
  j += "  \"backends\": {\"interp\": " + std::string(f.interp.ok ? "true" : "false") +
       ", \"cpu\": " + (f.cpu.ok ? "true" : "false") + ", \"cuda\": false},\n";
  j += "  \"problems\": [";
  for (std::size_t i = 0; i < f.problems.size(); ++i) {
    j += std::string(i ? ", " : "") + "{\"what\": " + quoted(f.problems[i].what) +
         ", \"fix\": " + quoted(f.problems[i].fix) + "}";
  }
  return j + "]\n}\n";
}

void print_build(const Facts& f) {
  std::printf("tileops %s\n", version());
  std::string targets;
  for (const std::string& t : f.simd_targets) targets += (targets.empty() ? "" : " ") + t;
  std::printf(
      "cpu: SIMD targets %s (dispatching to %s), %d threads (TILEOPS_NUM_THREADS sets "
      "the count)\n",
      targets.c_str(), f.simd_dispatch.c_str(), f.threads);
#if defined(__x86_64__) || defined(__i386__)
  std::printf("cpu: AMX-BF16 %s\n",
              !cpu_amx_bf16() ? "absent (bfloat16 matrix products use the SIMD targets)"
              : knob("TILEOPS_AMX") == "0"
                  ? "present, turned off by TILEOPS_AMX=0"
                  : "in use for bfloat16 matrix products (TILEOPS_AMX=0 turns it off)");
#endif
  if (f.simd_target_error.empty()) {
    std::printf("cpu: SIMD target %s, %s (TILEOPS_SIMD_TARGET forces one of: %s)\n",
                f.simd_target.c_str(), f.simd_target_reason.c_str(), accepted_simd_targets());
  } else {
    std::printf("cpu: SIMD target unusable: %s\n", f.simd_target_error.c_str());
  }
#if defined(__x86_64__) || defined(__i386__)
  std::printf("cpu: bfloat16 products: VDPBF16PS %s, AMX %s\n",
              f.dpbf16                       ? "on"
              : !cpu_avx512_bf16()           ? "off (absent)"
              : !f.simd_target_error.empty() ? "off"
                                             : "off (below the avx512 target)",
              f.amx                          ? "on"
              : !cpu_amx_bf16()              ? "off (absent)"
              : !simd_target_allows_avx512() ? "off (below the avx512 target)"
                                             : "off");
#else
  std::printf("cpu: bfloat16 products: widened to float32 (VDPBF16PS and AMX are x86 only)\n");
#endif
  if (f.simd_target_error.empty()) {
    std::printf(
        "cpu: linear_packed: x's rows as rows, the weight rows as lanes, up to M = %lld (%d "
        "float32 rows per pass); blocks of 16 x rows as lanes beyond\n",
        static_cast<long long>(f.packed_rows), f.packed_pass);
    const std::optional<std::string> pipeline = knob("TILEOPS_TL_SOFTMAX_PIPELINE");
    const bool forced = pipeline && !pipeline->empty();
    const bool intel = cpu_vendor() == CpuVendor::kIntel;
    std::printf(
        "cpu: the tl softmax normalises 16-bit rows %s (%s)\n",
        (forced ? *pipeline != "0" : !intel) ? "during the next row's exp pass" : "in a third pass",
        forced  ? "forced by TILEOPS_TL_SOFTMAX_PIPELINE"
        : intel ? "an Intel core; TILEOPS_TL_SOFTMAX_PIPELINE=1 pipelines"
                : "TILEOPS_TL_SOFTMAX_PIPELINE=0 takes a third pass");
    std::printf(
        "cpu: packing linear weights (pack_linear_weight) pays for float32 and float16%s "
        "(ops::linear_packing_pays; the decoder packs only then)\n",
        ops::linear_packing_pays(DataType::kBFloat16)
            ? " and bfloat16"
            : ", not for bfloat16: AMX runs linear's tile products on the [N, K] rows");
    std::printf(
        "cpu: linear_quantized at one bfloat16 row: int8 and int4 weights against x in 16-bit "
        "fixed point (16-bit integer multiply-adds)%s\n",
        f.dpbf16 ? ", int4 in groups of 32 through VDPBF16PS" : "");
    std::printf(
        "cpu: vectors execute at %d bits%s; paged_attention's decode kernels %s the next "
        "chunk's prefetch\n",
        f.datapath_bits,
        f.datapath_bits == 256 && f.simd_dispatch.starts_with("AVX3")
            ? " (AVX-512 in two halves: AMD family 19h)"
            : "",
        f.datapath_bits < 512 ? "take" : "take (from 4 flops per cached byte) or precede");
  }
  std::printf("cuda: not built\n");
}

void print_author_facts(const Facts& f) {
  if (f.compiler.empty()) {
    std::printf("compiler: none\n");
  } else {
    std::printf("compiler: %s (%s); test compile of a tl kernel for -march=%s: %s (%.2f s)\n",
                f.compiler.c_str(), f.compiler_version.c_str(), f.jit_target.c_str(),
                f.cpu.ok ? "ok" : "FAILED", f.cpu.seconds);
  }
  std::printf("cache: %s (%s)\n", f.cache.path.empty() ? "-" : f.cache.path.c_str(),
              f.cache.error.empty() ? "private, writable" : "REFUSED");
  const auto v = [&](const char* name) {
    const auto it = f.python_versions.find(name);
    return it == f.python_versions.end() ? std::string("-") : it->second;
  };
  std::printf("python: %s %s; numpy %s, torch %s, pytest %s\n", f.python.c_str(),
              v("python").c_str(), v("numpy").c_str(), v("torch").c_str(), v("pytest").c_str());
  std::printf("backends: interp %s, cpu %s, cuda not built\n", f.interp.ok ? "ok" : "FAILED",
              f.cpu.ok ? "ok" : "unavailable");
}

// Every variable of the knobs table, set or not: what changes tileops without a rebuild.
void print_knobs() {
  std::printf("\n%-23s %-7s %s\n", "environment", "value", "what it does (accepts)");
  for (const Knob& k : knobs()) {
    const std::optional<std::string> v = knob(k.name);
    std::printf("%-23s %-7s %s (%s)\n", std::string(k.name).c_str(),
                v ? ("'" + *v + "'").c_str() : "unset", std::string(k.effect).c_str(),
                std::string(k.accepts).c_str());
  }
}

void print_implementations() {
  int width = 8;  // the longest operator name
  for (const std::string& op : ops::registered_operators()) {
    width = std::max(width, static_cast<int>(op.size()));
  }
  std::printf("\n%-*s %-6s %s\n", width, "operator", "device", "implementations (index: name)");
  for (const std::string& op : ops::registered_operators()) {
    const auto indices = ops::active_implementation_indices(op, DeviceType::kCpu);
    const auto names = ops::active_implementation_names(op, DeviceType::kCpu);
    std::string list;
    for (std::size_t i = 0; i < indices.size(); ++i) {
      list += (i ? ", " : "") + std::to_string(indices[i]) + ": " + names[i];
    }
    std::printf("%-*s %-6s %s\n", width, op.c_str(), "cpu", list.c_str());
  }
}

}  // namespace

int run_env(int argc, char** argv) {
  bool json = false;
  const char* output = nullptr;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      output = argv[++i];
    } else {
      std::fprintf(stderr, "tileops env: unknown option '%s' (env takes --json and -o FILE)\n",
                   argv[i]);
      return 2;
    }
  }
  const Facts facts = gather();
  if (json && output == nullptr) {
    std::fputs(to_json(facts).c_str(), stdout);
  } else {
    print_build(facts);
    print_author_facts(facts);
    print_knobs();
    print_implementations();
  }
  if (output != nullptr) {
    std::ofstream file(output);
    file << to_json(facts);
    if (!file.flush())
      throw Error(ErrorKind::kInvalidArgument, std::string("tileops env: cannot write ") + output);
  }
  for (const Problem& p : facts.problems) {
    std::fprintf(stderr, "tileops env: %s; fix: %s\n", p.what.c_str(), p.fix.c_str());
  }
  return facts.problems.empty() ? 0 : 1;
}

}  // namespace tileops::cli
