// The cpu backend's persistent JIT cache: one compile per distinct kernel (across kernel objects
// and processes), a new compile when the IR, a constexpr, an option or an input dtype changes,
// concurrent processes and racing builders, a corrupted entry rebuilt, always_compile, compile
// errors, dump_dir.
// Each test uses its own fresh cache directory.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "src/tl/cpu/disk_cache.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/scoped_env.h"
#include "tests/support/self_command.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

namespace fs = std::filesystem;

class TlCpuCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tileops_tl_cache_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    cache_env_.emplace("TILEOPS_CACHE_DIR", dir_.string());
  }
  void TearDown() override {
    cache_env_.reset();
    fs::remove_all(dir_);
  }

  std::vector<fs::path> objects() const {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(dir_ / "cpu")) {
      if (e.path().extension() == ".so") found.push_back(e.path());
    }
    return found;
  }

  fs::path dir_;
  std::optional<testing::ScopedEnv> cache_env_;
};

// y = x * scale (+ 1 when `plus`), tiles of `tile`.
tl::Kernel scale(bool plus = false, tl::Options o = {.backend = "cpu"}) {
  return tl::jit(
      "scale",
      [plus](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int n, tl::Float s,
             tl::ConstExpr<int> tile) {
        const tl::Value tx = tl::tensor(x, {n}), ty = tl::tensor(y, {n});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, *tile), tl::block_num())) {
          tl::Value v = tl::load(tx, {*tile}, {i * *tile}) * s;
          if (plus) v = v + 1;
          tl::store(v, ty, {i * *tile});
        }
      },
      std::move(o));
}

void check_scale(const tl::Kernel& k, DataType dtype = DataType::kFloat32, int tile = 64,
                 bool plus = false) {
  std::mt19937_64 rng(3);
  TensorStorage x = random_tensor({100}, dtype, rng), y = poisoned({100}, dtype);
  k.launch(1, x, y, 100, 2.0, tile);
  EXPECT_EQ(
      compare(y, map(to_doubles(x), [&](double v) { return v * 2 + (plus ? 1 : 0); }), tol(dtype)),
      "");
}

// covers: cache always_compile
TEST_F(TlCpuCache, OneCompilePerDistinctKernel) {
  const std::int64_t start = tl::cpu_compile_count();
  check_scale(scale());
  check_scale(scale());  // a new kernel object: found on disk
  EXPECT_EQ(tl::cpu_compile_count() - start, 1);
  EXPECT_EQ(objects().size(), 1u);
  check_scale(scale(), DataType::kFloat32, 128);  // constexpr
  EXPECT_EQ(tl::cpu_compile_count() - start, 2);
  check_scale(scale(false, {.opt_level = 1, .backend = "cpu"}));  // option
  EXPECT_EQ(tl::cpu_compile_count() - start, 3);
  check_scale(scale(), DataType::kFloat64);  // input dtype
  EXPECT_EQ(tl::cpu_compile_count() - start, 4);
  check_scale(scale(true), DataType::kFloat32, 64, true);  // kernel body
  EXPECT_EQ(tl::cpu_compile_count() - start, 5);
  // Options that do not change the code share the object.
  check_scale(scale(false, {.print_ir = false, .backend = "cpu", .dump_dir = ""}));
  EXPECT_EQ(tl::cpu_compile_count() - start, 5);
  const tl::Kernel always = scale(false, {.always_compile = true, .backend = "cpu"});
  check_scale(always);
  check_scale(always);
  EXPECT_EQ(tl::cpu_compile_count() - start, 7);
  EXPECT_EQ(objects().size(), 5u);  // always_compile leaves nothing behind
}

TEST_F(TlCpuCache, CorruptedEntriesAreRebuilt) {
  const std::int64_t start = tl::cpu_compile_count();
  check_scale(scale());
  ASSERT_EQ(objects().size(), 1u);
  const fs::path object = objects()[0];
  fs::resize_file(object, fs::file_size(object) / 2);  // truncated object
  check_scale(scale());
  EXPECT_EQ(tl::cpu_compile_count() - start, 2);
  fs::path meta = object;
  meta.replace_extension(".meta");
  std::ofstream(meta) << "tileops-tl-cpu 1 12 0000\n";  // checksum mismatch
  check_scale(scale());
  EXPECT_EQ(tl::cpu_compile_count() - start, 3);
  fs::remove(meta);  // missing metadata
  check_scale(scale());
  EXPECT_EQ(tl::cpu_compile_count() - start, 4);
  check_scale(scale());
  EXPECT_EQ(tl::cpu_compile_count() - start, 4);
}

// A directory where an entry's object or metadata belongs is not ours to replace: the kernel is
// built and loaded uncached (a std::filesystem error escaped before), no temporary is left.
TEST_F(TlCpuCache, EntryNamesHeldByDirectoriesAreWorkedAround) {
  check_scale(scale());
  ASSERT_EQ(objects().size(), 1u);
  const fs::path object = objects()[0];
  fs::path meta = object;
  meta.replace_extension(".meta");
  fs::remove(object);
  fs::create_directory(object);
  const std::int64_t start = tl::cpu_compile_count();
  check_scale(scale());
  check_scale(scale());  // never cached: built again
  EXPECT_EQ(tl::cpu_compile_count() - start, 2);
  fs::remove(object);
  fs::remove(meta);
  fs::create_directory(meta);
  check_scale(scale());  // the object lands, its metadata cannot: rebuilt next time
  check_scale(scale());
  EXPECT_EQ(tl::cpu_compile_count() - start, 4);
  for (const auto& e : fs::directory_iterator(dir_ / "cpu")) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(TlCpuCache, ConcurrentProcessesCompileTheSameKernel) {
  pid_t children[2];
  for (pid_t& child : children) {
    child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // one block: the child must not touch the parent's thread pool
      std::mt19937_64 rng(3);
      TensorStorage x = random_tensor({100}, DataType::kFloat32, rng);
      TensorStorage y = poisoned({100}, DataType::kFloat32);
      scale().launch(1, x, y, 100, 2.0, 64);
      const auto xs = to_doubles(x), ys = to_doubles(y);
      for (std::size_t i = 0; i < xs.size(); ++i) {
        if (ys[i] != xs[i] * 2) ::_exit(1);
      }
      ::_exit(0);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(objects().size(), 1u);
  const std::int64_t start = tl::cpu_compile_count();
  check_scale(scale());  // the entry they left is valid
  EXPECT_EQ(tl::cpu_compile_count() - start, 0);
}

// Builders racing on one key, each writing different bytes (as two processes' compiles do: the
// object names its temporary source file): whatever the interleaving, the entry left behind is
// one builder's object with that object's metadata, so the next lookup builds nothing.
TEST_F(TlCpuCache, RacingBuildersLeaveAConsistentEntry) {
  constexpr int kBuilders = 8;
  for (int round = 0; round < 20; ++round) {
    const std::string key = tl::cpu::digest("race " + std::to_string(round));
    std::atomic<int> ready{0};
    std::vector<std::thread> builders;
    builders.reserve(kBuilders);
    for (int b = 0; b < kBuilders; ++b) {
      builders.emplace_back([&, b] {
        ready.fetch_add(1);
        while (ready.load() < kBuilders) std::this_thread::yield();
        tl::cpu::find_or_build(key, false, [&](const std::string& path) {
          std::ofstream(path, std::ios::binary)
              << "\x7f"
                 "ELF"
              << std::string(4096 + b, static_cast<char>('a' + b));
        });
      });
    }
    for (std::thread& t : builders) t.join();
    bool rebuilt = false;
    tl::cpu::find_or_build(key, false, [&](const std::string& path) {
      rebuilt = true;
      std::ofstream(path, std::ios::binary) << "again";
    });
    EXPECT_FALSE(rebuilt) << "round " << round << ": the entry's metadata is another object's";
  }
}

// covers: dump_dir
TEST_F(TlCpuCache, DumpDirHoldsIrSourceAndObject) {
  const fs::path dump = dir_ / "dump";
  check_scale(scale(false, {.backend = "cpu", .dump_dir = dump.string()}));
  std::set<std::string> extensions;
  for (const auto& e : fs::directory_iterator(dump)) extensions.insert(e.path().extension());
  EXPECT_EQ(extensions, (std::set<std::string>{".cc", ".so", ".tlir"}));
}

TEST_F(TlCpuCache, DumpDirFromTheEnvironmentWhenTheOptionIsEmpty) {
  const fs::path dump = dir_ / "env_dump";
  const tl::Kernel k = [&] {
    const testing::ScopedEnv env("TILEOPS_TL_DUMP_DIR", dump.string());
    return scale(false, {.backend = "cpu"});
  }();
  EXPECT_EQ(k.options().dump_dir, dump.string());
  check_scale(k);
  std::set<std::string> extensions;
  for (const auto& e : fs::directory_iterator(dump)) extensions.insert(e.path().extension());
  EXPECT_EQ(extensions, (std::set<std::string>{".cc", ".so", ".tlir"}));
}

// A tile summed and then stored is copied into y, and a zero tile filled: both as inline loops,
// not calls to memcpy/memset (glibc's `rep movsb` path has a 3x cliff on AMD Zen 3).
TEST_F(TlCpuCache, CopyLoopsStayLoops) {
  const fs::path dump = dir_ / "dump";
  const tl::Kernel k =
      tl::jit("sum_then_store",
              [](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress z) {
                const tl::Value tx = tl::tensor(x, {1024}), ty = tl::tensor(y, {2048});
                const tl::Value tz = tl::tensor(z, {1});
                const tl::Value e = tl::exp(tl::load(tx, {1024}, {0}));
                tl::store(tl::zeros({1}, DataType::kFloat32) + tl::reduce_sum(e), tz, {0});
                tl::store(e, ty, {0});
                tl::store(tl::zeros({1024}, DataType::kFloat32), ty, {1024});
              },
              {.backend = "cpu", .dump_dir = dump.string()});
  std::mt19937_64 rng(5);
  TensorStorage x = random_tensor({1024}, DataType::kFloat32, rng);
  TensorStorage y = poisoned({2048}, DataType::kFloat32), z = poisoned({1}, DataType::kFloat32);
  k.launch(1, x, y, z);
  std::vector<double> want = map(to_doubles(x), [](double v) { return std::exp(v); });
  double sum = 0;
  for (double v : want) sum += v;
  want.resize(2048, 0.0);
  EXPECT_EQ(compare(y, want, tol(DataType::kFloat32)), "");
  EXPECT_EQ(compare(z, {sum}, {0, 1e-5}), "");  // float32 terms summed in float32 blocks
  int objects = 0;
  for (const auto& e : fs::directory_iterator(dump)) {
    if (e.path().extension() != ".so") continue;
    ++objects;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const char* f : {"memcpy", "memmove", "memset"}) {
      EXPECT_EQ(bytes.find(f), std::string::npos) << e.path() << " calls " << f;
    }
  }
  EXPECT_EQ(objects, 1);
}

// A cache directory that cannot be made (here: below a regular file) fails the build of the
// kernel, naming the directory and the variable that moves it; nothing is written.
TEST_F(TlCpuCache, UnusableCacheDirectoryIsACompileError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a directory";
  const testing::ScopedEnv env("TILEOPS_CACHE_DIR", (dir_ / "file" / "below").string());
  TensorStorage x({100}, DataType::kFloat32);
  TensorStorage y = poisoned({100}, DataType::kFloat32);
  try {
    scale(false, {.always_compile = true, .backend = "cpu"}).launch(1, x, y, 100, 2.0, 64);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCompileError);
    const std::string what = e.what();
    EXPECT_NE(what.find("JIT cache directory " + (dir_ / "file" / "below").string()),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("TILEOPS_CACHE_DIR"), std::string::npos) << what;
  }
  EXPECT_EQ(snapshot(y), snapshot(poisoned({100}, DataType::kFloat32)));
}

// $TILEOPS_TL_TARGET stands in for an empty `target`: a name the compiler rejects is an error
// naming it. The option wins over the variable. (Compile failures: tl_cpu_cache_trust_test.)
TEST_F(TlCpuCache, TargetVariableAppliesWhenTheOptionIsEmpty) {
  std::optional<testing::ScopedEnv> env(std::in_place, "TILEOPS_TL_TARGET", "no-such-cpu");
  TensorStorage x({100}, DataType::kFloat32);
  TensorStorage y = poisoned({100}, DataType::kFloat32);
  std::string what;
  try {
    scale(false, {.always_compile = true, .backend = "cpu"}).launch(1, x, y, 100, 2.0, 64);
  } catch (const Error& e) {
    what = e.what();
  }
  bool option_wins = true;
  try {
    scale(false, {.always_compile = true, .backend = "cpu", .target = "native"})
        .launch(1, x, y, 100, 2.0, 64);
  } catch (const Error&) {
    option_wins = false;
  }
  env.reset();
  EXPECT_NE(what.find("no-such-cpu"), std::string::npos) << "no compile error naming the target";
  EXPECT_TRUE(option_wins);
}

// Without a compiler (TILEOPS_CXX set empty) `auto` runs kernels on the interpreter and says so
// once per process; `backend="cpu"` is refused. Checked in a child process (this test binary
// re-run with a filter), since the compiler is looked up once per process.
TEST(TlCpuBackendSelection, NoCompilerFallsBackToInterp) {
  if (std::getenv("TILEOPS_TL_SELECTION_CHILD") != nullptr) {
    std::mt19937_64 rng(3);
    TensorStorage x = random_tensor({100}, DataType::kFloat32, rng);
    for (bool plus : {false, true}) {
      const tl::Kernel k = scale(plus, tl::Options{});
      check_scale(k, DataType::kFloat32, 64, plus);
    }
    TensorStorage y = poisoned({100}, DataType::kFloat32);
    expect_rejected([&] { scale().launch(1, x, y, 100, 2.0, 64); }, y, "backend",
                    ErrorKind::kUnsupported);
    return;
  }
  const std::string command =
      "TILEOPS_TL_SELECTION_CHILD=1 TILEOPS_CXX= TILEOPS_TL_BACKEND= " + testing::self_command() +
      " --gtest_filter=TlCpuBackendSelection.NoCompilerFallsBackToInterp 2>&1";
  const auto [status, output] = run_command(command);
  EXPECT_EQ(status, 0) << output;
  const std::string notice = "no C++ compiler found";
  const std::size_t first = output.find(notice);
  EXPECT_NE(first, std::string::npos) << output;
  EXPECT_EQ(output.find(notice, first + 1), std::string::npos) << output;  // once
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
}

}  // namespace
}  // namespace tileops::testing::tl_test
