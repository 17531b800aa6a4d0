// The shell words that run this test program again, for tests that check a child with other flags
// or environment: the program's own path, behind the emulator that runs the tests in a cross build
// (TILEOPS_TEST_EMULATOR, which CTest sets from CMAKE_CROSSCOMPILING_EMULATOR). Under qemu-user,
// /proc/<pid>/exe names the emulator, not the program; readlink("/proc/self/exe") is answered with
// the program.
#pragma once

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

namespace tileops::testing {

inline std::string self_command() {
  char path[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string command = "'";
  for (const char c : n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "/proc/self/exe") {
    command += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  command += "'";
  const char* const emulator = std::getenv("TILEOPS_TEST_EMULATOR");
  if (emulator != nullptr && *emulator != '\0') command = std::string(emulator) + " " + command;
  return command;
}

}  // namespace tileops::testing
