// Helpers for the tile-language tests: random tensors, float64 references and comparisons.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_tensors.h"
#include "tileops/tl.h"

namespace tileops::testing::tl_test {

namespace tl = ::tileops::tl;

// An empty directory for one test's dumped kernels (dump_dir), unique to this process: ctest runs
// a test binary and its AVX2 variant at once, and one must not remove the other's files while
// they compile.
inline std::string fresh_dump_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// The generated source a kernel dumped into `dir` (dump_dir; the test's only kernel there).
inline std::string dumped_source(const std::string& dir) {
  std::string source;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".cc") continue;
    std::ifstream in(e.path());
    source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return source;
}

inline std::vector<double> map(const std::vector<double>& x,
                               const std::function<double(double)>& f) {
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = f(x[i]);
  return out;
}

// Softmax in float64 of each row of `width` values in `x` (row-major), in place.
inline void softmax_rows_f64(std::vector<double>& x, std::size_t width) {
  for (auto row = x.begin(); row != x.end(); row += static_cast<std::ptrdiff_t>(width)) {
    const auto end = row + static_cast<std::ptrdiff_t>(width);
    const double max = *std::max_element(row, end);
    double sum = 0;
    for (auto v = row; v != end; ++v) sum += (*v = std::exp(*v - max));
    for (auto v = row; v != end; ++v) *v /= sum;
  }
}

// Tolerance for a result rounded to `dtype` after float64-exact math: half an ulp of the dtype
// plus float32 intermediate rounding.
inline Tolerance tol(DataType dtype) {
  if (dtype == DataType::kFloat64) return {1e-12, 1e-12};
  if (dtype == DataType::kFloat32) return {2e-6, 2e-6};
  return tolerance_for(dtype);
}

// A shell command's exit status (-1: it could not start) and standard output (add 2>&1 for
// stderr). The tests that need a fresh process (a compiler looked up once per process) re-run
// their own binary through it.
struct CommandResult {
  int status = -1;
  std::string output;
};
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* child = ::popen(command.c_str(), "r");
  if (child == nullptr) return r;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), child) != nullptr) r.output += buf;
  r.status = ::pclose(child);
  return r;
}

// The block counts every test launches with (0 = all cores).
inline const std::vector<int>& core_nums() {
  static const std::vector<int> kCores = {1, 3, 16, 0};
  return kCores;
}

// The float32 values of the bit patterns 0, step, 2 step, ... below 2^32 (every sign, binade,
// subnormals, infinities and NaNs for a step coprime to 2), appended to xs.
inline void append_every_nth_float(std::vector<float>& xs, std::uint64_t step) {
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += step) {
    const auto bits = static_cast<std::uint32_t>(u);
    float f = 0;
    std::memcpy(&f, &bits, 4);
    xs.push_back(f);
  }
}

}  // namespace tileops::testing::tl_test
