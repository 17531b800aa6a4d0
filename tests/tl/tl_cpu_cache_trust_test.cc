// What the cpu backend's JIT cache trusts (issue #35, items 5 and 7-11): SHA-256 against FIPS
// 180-4's examples; private cache directories (shared, foreign and linked ones refused, a
// per-process one without HOME); entries bound to their key (another entry's object copied or
// linked in is not loaded; garbage with matching metadata is rebuilt); stale temporaries removed;
// ConstExpr keys that cannot collide; kernel names that are not paths; compile errors with the
// compiler's output; targets this CPU cannot run refused before anything runs.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "src/tl/cpu/disk_cache.h"
#include "src/tl/cpu/sha256.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/scoped_env.h"
#include "tests/support/self_command.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, FipsExamples) {
  using tl::cpu::sha256_hex;
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjk"
                       "lmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Padding edges: 55 bytes fit one block with the length, 56 need two.
  EXPECT_EQ(sha256_hex(std::string(55, 'x')),
            "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  EXPECT_EQ(sha256_hex(std::string(56, 'x')),
            "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
  EXPECT_EQ(sha256_hex(std::string(64, 'x')),
            "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}

TEST(EntryMetadata, MatchesOnlyItsKeyAndItsBytes) {
  const std::string key = tl::cpu::digest("key a"), other = tl::cpu::digest("key b");
  const std::string object = std::string(
                                 "\x7f"
                                 "ELF") +
                             std::string(100, 'x');
  const std::string meta = tl::cpu::entry_metadata(key, object);
  EXPECT_TRUE(tl::cpu::entry_metadata_matches(meta, key, object));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(meta, other, object));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(meta, key, object + "y"));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(meta, key, object.substr(0, 50)));
  std::string flipped = object;
  flipped[60] = 'z';
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(meta, key, flipped));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(meta + "\n", key, object));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches("", key, object));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(tl::cpu::entry_metadata(key, ""), key, ""));
  EXPECT_FALSE(tl::cpu::entry_metadata_matches(tl::cpu::entry_metadata(key, "garbage"), key,
                                               "garbage"));  // not an ELF object
}

class TlCpuCacheTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tileops_tl_trust_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    cache_env_.emplace("TILEOPS_CACHE_DIR", dir_.string());
  }
  void TearDown() override {
    cache_env_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  std::optional<ScopedEnv> cache_env_;
};

// y = x * s (+ 1 when `plus`).
tl::Kernel scale(bool plus = false, tl::Options o = {.backend = "cpu"},
                 std::string name = "scale") {
  return tl::jit(
      std::move(name),
      [plus](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int n, tl::Float s) {
        const tl::Value tx = tl::tensor(x, {n}), ty = tl::tensor(y, {n});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, 64), tl::block_num())) {
          tl::Value v = tl::load(tx, {64}, {i * 64}) * s;
          if (plus) v = v + 1;
          tl::store(v, ty, {i * 64});
        }
      },
      std::move(o));
}

// Runs `k` on 100 elements; "" when y = 2x (+ 1), else what went wrong.
std::string run_scale(const tl::Kernel& k, bool plus) {
  std::mt19937_64 rng(3);
  TensorStorage x = random_tensor({100}, DataType::kFloat32, rng);
  TensorStorage y = poisoned({100}, DataType::kFloat32);
  try {
    k.launch(1, x, y, 100, 2.0);
  } catch (const Error& e) {
    return e.what();
  }
  return compare(y, map(to_doubles(x), [&](double v) { return v * 2 + (plus ? 1 : 0); }),
                 tol(DataType::kFloat32));
}

// The error a launch of scale() raises ("" for none), with its kind.
std::string launch_error(const tl::Kernel& k, ErrorKind* kind = nullptr) {
  TensorStorage x({100}, DataType::kFloat32);
  TensorStorage y = poisoned({100}, DataType::kFloat32);
  try {
    k.launch(1, x, y, 100, 2.0);
  } catch (const Error& e) {
    if (kind != nullptr) *kind = e.kind();
    EXPECT_EQ(snapshot(y), snapshot(poisoned({100}, DataType::kFloat32)));
    return e.what();
  }
  return "";
}

TEST_F(TlCpuCacheTrust, DirectoriesAreCreatedPrivate) {
  EXPECT_EQ(run_scale(scale(), false), "");
  for (const fs::path& d : {dir_, dir_ / "cpu"}) {
    struct stat st {};
    ASSERT_EQ(::lstat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }
}

// A cache directory that others can write, that is someone else's or a symbolic link may hold
// code this process did not build: refused before anything is compiled or loaded.
TEST_F(TlCpuCacheTrust, SharedForeignAndLinkedDirectoriesAreRefused) {
  EXPECT_EQ(run_scale(scale(), false), "");
  const std::int64_t start = tl::cpu_compile_count();
  const auto refused = [&](const std::string& why) {
    ErrorKind kind{};
    const std::string what = launch_error(scale(true), &kind);
    EXPECT_EQ(kind, ErrorKind::kCompileError) << what;
    EXPECT_NE(what.find("refusing the JIT cache directory"), std::string::npos) << what;
    EXPECT_NE(what.find(why), std::string::npos) << what;
  };
  fs::permissions(dir_, fs::perms::all);  // 0777
  refused("writable by group or others (mode 0777)");
  fs::permissions(dir_, fs::perms::owner_all);
  fs::permissions(dir_ / "cpu", fs::perms::owner_all | fs::perms::group_all);  // 0770
  refused((dir_ / "cpu").string() + ": it is writable by group or others (mode 0770)");
  fs::permissions(dir_ / "cpu", fs::perms::owner_all);
  const fs::path link = dir_.string() + "_link";
  fs::create_directory_symlink(dir_, link);
  {
    const ScopedEnv env("TILEOPS_CACHE_DIR", link.string());
    refused("symbolic link");
  }
  fs::remove(link);
  if (::geteuid() == 0) {  // only root can give a directory away
    ASSERT_EQ(::chown((dir_ / "cpu").c_str(), 65534, 65534), 0);
    refused("owned by uid 65534");
    ASSERT_EQ(::chown((dir_ / "cpu").c_str(), 0, 0), 0);
  }
  EXPECT_EQ(tl::cpu_compile_count() - start, 0);
  EXPECT_EQ(run_scale(scale(true), true), "");  // private again: used
}

// Without HOME and TILEOPS_CACHE_DIR the cache is a private directory of this process, removed
// at exit, with one notice (checked in a child: this binary re-run with a filter).
TEST(TlCpuCacheFallback, NoHomeMeansAPrivateDirectoryOfThisProcess) {
  if (std::getenv("TILEOPS_TL_FALLBACK_CHILD") != nullptr) {
    EXPECT_EQ(run_scale(scale(), false), "");
    EXPECT_EQ(run_scale(scale(true), true), "");
    const fs::path dir = tl::cpu::cache_dir();
    struct stat st {};
    ASSERT_EQ(::lstat(dir.parent_path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_EQ(st.st_uid, ::geteuid());
    std::printf("cache at %s\n", dir.parent_path().c_str());
    return;
  }
  const auto [status, output] = run_command(
      "env -u HOME -u TILEOPS_CACHE_DIR TILEOPS_TL_FALLBACK_CHILD=1 " + testing::self_command() +
      " --gtest_filter=TlCpuCacheFallback.NoHomeMeansAPrivateDirectoryOfThisProcess 2>&1");
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
  const std::string notice = "for this process only";
  const std::size_t first = output.find(notice);
  EXPECT_NE(first, std::string::npos) << output;
  EXPECT_EQ(output.find(notice, first + 1), std::string::npos) << output;  // once
  const std::size_t at = output.find("cache at ");
  ASSERT_NE(at, std::string::npos) << output;
  const std::string dir = output.substr(at + 9, output.find('\n', at) - at - 9);
  EXPECT_NE(dir.find("tileops-cache-"), std::string::npos) << dir;
  EXPECT_FALSE(fs::exists(dir)) << dir << " left behind";
}

fs::path entry_of(const fs::path& cpu_dir, const std::set<fs::path>& before) {
  for (const auto& e : fs::directory_iterator(cpu_dir)) {
    if (e.path().extension() == ".so" && before.count(e.path()) == 0) return e.path();
  }
  return {};
}

fs::path meta_of(fs::path object) { return object.replace_extension(".meta"); }

// Entry B replaced by entry A's object and metadata (copied, hard-linked or symlinked): B's
// kernel must still compute B, never A (it computed x * s for x * s + 1 before).
TEST_F(TlCpuCacheTrust, AnotherEntryUnderThisKeyIsNotLoaded) {
  EXPECT_EQ(run_scale(scale(false), false), "");
  const fs::path a = entry_of(dir_ / "cpu", {});
  EXPECT_EQ(run_scale(scale(true), true), "");
  const fs::path b = entry_of(dir_ / "cpu", {a});
  ASSERT_FALSE(a.empty() || b.empty());
  for (const char* how : {"copy", "hard link", "symbolic link"}) {
    SCOPED_TRACE(how);
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{meta_of(a), meta_of(b)}}) {
      fs::remove(to);
      if (std::string(how) == "copy") fs::copy_file(from, to);
      if (std::string(how) == "hard link") fs::create_hard_link(from, to);
      if (std::string(how) == "symbolic link") fs::create_symlink(from, to);
    }
    const std::int64_t start = tl::cpu_compile_count();
    EXPECT_EQ(run_scale(scale(true), true), "");
    EXPECT_EQ(tl::cpu_compile_count() - start, 1);  // rebuilt
    EXPECT_EQ(run_scale(scale(false), false), "");  // A's entry is intact
    EXPECT_EQ(tl::cpu_compile_count() - start, 1);
  }
}

// An object that is garbage (or empty) but has matching metadata fails to load once: the entry
// is rebuilt, not an error on every run.
TEST_F(TlCpuCacheTrust, GarbageWithMatchingMetadataIsRebuilt) {
  EXPECT_EQ(run_scale(scale(), false), "");
  const fs::path object = entry_of(dir_ / "cpu", {});
  const std::string key = object.stem().string();
  for (const std::string& garbage : {std::string("\x7f"
                                                 "ELF not really"),
                                     std::string()}) {
    fs::remove(object);
    std::ofstream(object, std::ios::binary) << garbage;
    std::ofstream(meta_of(object), std::ios::binary) << tl::cpu::entry_metadata(key, garbage);
    const std::int64_t start = tl::cpu_compile_count();
    EXPECT_EQ(run_scale(scale(), false), "");
    EXPECT_EQ(run_scale(scale(), false), "");
    EXPECT_EQ(tl::cpu_compile_count() - start, 1);
  }
}

// Temporaries of compiles that were killed are removed; a live process's are not.
TEST_F(TlCpuCacheTrust, StaleTemporariesAreRemoved) {
  const fs::path cpu = dir_ / "cpu";  // new to this process: its first lookup there cleans
  fs::create_directories(cpu);
  fs::permissions(dir_, fs::perms::owner_all);
  fs::permissions(cpu, fs::perms::owner_all);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // a pid that is dead now
  const std::string k = std::string(64, 'a');
  const fs::path stale = cpu / (k + ".tmp." + std::to_string(child) + ".1.so.cc");
  const fs::path fresh = cpu / (k + ".tmp." + std::to_string(child) + ".2.so");
  const fs::path live = cpu / (k + ".tmp." + std::to_string(::getpid()) + ".3.so");
  for (const fs::path& p : {stale, fresh, live}) std::ofstream(p) << "partial";
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(stale, hour_ago);
  fs::last_write_time(live, hour_ago);
  tl::cpu::find_or_build(tl::cpu::digest("any"), false, [](const std::string& path) {
    std::ofstream(path, std::ios::binary) << "\x7f"
                                             "ELF";
  });
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));  // may still be compiling in another pid namespace
  EXPECT_TRUE(fs::exists(live));
}

// ConstExpr strings are keyed length-prefixed: these two argument lists once shared a key (and
// the second launch reused the first's trace).
TEST(TlJitKeys, ConstExprStringsDoNotCollide) {
  const tl::Kernel k =
      tl::jit("lengths",
              [](tl::GlobalAddress y, tl::ConstExpr<std::string> a, tl::ConstExpr<std::string> b) {
                const double lengths = static_cast<double>(a.value.size() * 100 + b.value.size());
                tl::store(tl::full({1}, lengths, DataType::kFloat32), tl::tensor(y, {1}), {0});
              },
              {.backend = "interp"});
  TensorStorage y1({1}, DataType::kFloat32), y2({1}, DataType::kFloat32);
  k.launch(1, y1, std::string("x'|c:'y"), std::string("z"));
  k.launch(1, y2, std::string("x"), std::string("y'|c:'z"));
  EXPECT_EQ(k.num_specialisations(), 2u);
  EXPECT_EQ(to_doubles(y1)[0], 701.0);
  EXPECT_EQ(to_doubles(y2)[0], 107.0);
}

// A kernel name is not a path: "../../escaped" dumps inside dump_dir, nothing above it.
TEST_F(TlCpuCacheTrust, KernelNamesStayInsideTheDumpDirectory) {
  const fs::path dump = dir_ / "a" / "b" / "dump";
  EXPECT_EQ(run_scale(scale(false, {.backend = "cpu", .dump_dir = dump.string()}, "../../escaped"),
                      false),
            "");
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (e.path().filename().string().find("escaped") != std::string::npos) {
      EXPECT_EQ(e.path().parent_path(), dump) << e.path();
    }
  }
  int dumped = 0;
  for (const auto& e : fs::directory_iterator(dump)) dumped += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(dumped, 3);  // .tlir, .cc, .so
}

// A compile that fails reports the compiler's own output, whatever the kernel is called (a name
// with '/' once ended in "filesystem error: cannot rename"). A fake compiler, in a child process
// (the compiler is looked up once per process).
TEST(TlCpuCompileErrors, TheCompilersOutputIsTheError) {
  if (std::getenv("TILEOPS_TL_FAKE_CXX_CHILD") != nullptr) {
    for (const char* name : {"scale", "a/b", "../../x"}) {
      ErrorKind kind{};
      const std::string what = launch_error(scale(false, {.backend = "cpu"}, name), &kind);
      EXPECT_EQ(kind, ErrorKind::kCompileError) << what;
      EXPECT_NE(what.find("fake compiler: no such luck"), std::string::npos) << what;
      EXPECT_EQ(what.find("filesystem error"), std::string::npos) << what;
      const std::size_t at = what.find("compile ");
      ASSERT_NE(at, std::string::npos) << what;
      const fs::path source = what.substr(at + 8, what.find('\n') - at - 8);
      EXPECT_TRUE(fs::exists(source)) << source;  // kept for the user
      EXPECT_EQ(source.parent_path(), tl::cpu::cache_dir()) << source;
    }
    return;
  }
  const fs::path dir =
      fs::temp_directory_path() / ("tileops_fake_cxx_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path cxx = dir / "fake-c++";
  std::ofstream(cxx) << "#!/bin/sh\necho 'fake compiler: no such luck' >&2\nexit 1\n";
  fs::permissions(cxx, fs::perms::owner_all);
  // The child compiles for the default target: a named one ($TILEOPS_TL_TARGET, which the Arm
  // lane sets) is first checked by the compiler, and the fake one would fail that check instead.
  const auto [status, output] = run_command(
      "env -u TILEOPS_TL_TARGET TILEOPS_TL_FAKE_CXX_CHILD=1 TILEOPS_CXX=" + cxx.string() +
      " TILEOPS_CACHE_DIR=" + (dir / "cache").string() + " " + testing::self_command() +
      " --gtest_filter=TlCpuCompileErrors.TheCompilersOutputIsTheError 2>&1");
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
  fs::remove_all(dir);
}

// A cache this process cannot write: the error names the directory and the cause (it was
// "filesystem error: cannot rename ... .failed.cc"). Root writes anything, so as root the check
// runs in a child that has become another user.
TEST_F(TlCpuCacheTrust, ReadOnlyCacheNamesTheCause) {
  fs::create_directories(dir_ / "cpu");
  fs::permissions(dir_ / "cpu", fs::perms::owner_read | fs::perms::owner_exec);
  const bool root = ::geteuid() == 0;
  if (root) {
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_exec);
    ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chown((dir_ / "cpu").c_str(), 65534, 65534), 0);
  }
  const auto check = [&] {
    ErrorKind kind{};
    const std::string what = launch_error(scale(), &kind);
    EXPECT_EQ(kind, ErrorKind::kCompileError) << what;
    EXPECT_NE(what.find("Permission denied"), std::string::npos) << what;
    EXPECT_NE(what.find((dir_ / "cpu").string()), std::string::npos) << what;
    EXPECT_EQ(what.find("filesystem error"), std::string::npos) << what;
    return !::testing::Test::HasFailure();
  };
  if (!root) {
    check();
  } else {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const bool ok = ::setgid(65534) == 0 && ::setuid(65534) == 0 && check();
      ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    ASSERT_EQ(::chown(dir_.c_str(), 0, 0), 0);
  }
  fs::permissions(dir_ / "cpu", fs::perms::owner_all);
}

#if defined(__x86_64__)
// Code for a CPU with instruction sets this one lacks would die of SIGILL: refused before
// anything is compiled or run. knl (Xeon Phi) has AVX512ER, which no other x86 CPU has.
TEST_F(TlCpuCacheTrust, TargetsThisCpuCannotRunAreRefused) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512er")) GTEST_SKIP() << "this CPU runs knl code";
  const std::int64_t start = tl::cpu_compile_count();
  ErrorKind kind{};
  std::string what = launch_error(scale(false, {.backend = "cpu", .target = "knl"}), &kind);
  EXPECT_EQ(kind, ErrorKind::kUnsupported) << what;
  EXPECT_NE(what.find("AVX512ER"), std::string::npos) << what;
  {
    const ScopedEnv env("TILEOPS_TL_TARGET", "knl");
    what = launch_error(scale(false, {.always_compile = true, .backend = "cpu"}), &kind);
  }
  EXPECT_EQ(kind, ErrorKind::kUnsupported) << what;
  EXPECT_NE(what.find("TILEOPS_TL_TARGET"), std::string::npos) << what;
  EXPECT_EQ(tl::cpu_compile_count() - start, 0);
  EXPECT_EQ(run_scale(scale(false, {.backend = "cpu", .target = "x86-64"}), false), "");
}
#endif

// A target is a name, never shell text, and one the compiler knows.
TEST_F(TlCpuCacheTrust, MalformedAndUnknownTargetsAreRefused) {
  const fs::path touched = dir_.string() + "_touched";
  const std::string evil = "x86-64;touch " + touched.string();
  const TensorStorage none;
  expect_rejected([&] { scale(false, {.backend = "cpu", .target = evil}); }, none, "target");
  tl::Options o;
  expect_rejected([&] { o.set("target", std::string("$(id)")); }, none, "target");
  ErrorKind kind{};
  std::string what;
  {
    const ScopedEnv env("TILEOPS_TL_TARGET", "haswell$(touch " + touched.string() + ")");
    what = launch_error(scale(false, {.always_compile = true, .backend = "cpu"}), &kind);
  }
  EXPECT_EQ(kind, ErrorKind::kInvalidArgument) << what;
  EXPECT_NE(what.find("is not a target name"), std::string::npos) << what;
  what = launch_error(scale(false, {.backend = "cpu", .target = "no-such-cpu"}), &kind);
  EXPECT_EQ(kind, ErrorKind::kCompileError) << what;
  EXPECT_NE(what.find("the compiler rejects -march=no-such-cpu"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(touched));
}

}  // namespace
}  // namespace tileops::testing::tl_test
