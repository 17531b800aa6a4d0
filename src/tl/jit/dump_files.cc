// Files written for the user (dump_dir): kernel names come from users (Python's __name__ can be
// set to anything), so they are mapped to one safe file-name component, never read as a path;
// and a write that fails says why instead of leaving nothing behind silently.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "src/tl/jit/executable.h"
#include "tileops/core/error.h"

namespace tileops::tl {

std::string file_stem(std::string_view kernel_name) {
  constexpr std::size_t kMaxLength = 80;  // with "-<hash>.tlir": well inside NAME_MAX
  std::string stem;
  for (const char c : kernel_name.substr(0, kMaxLength)) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.';
    stem += safe ? c : '_';
  }
  if (stem.empty()) return "kernel";
  if (stem[0] == '.' || stem[0] == '-') stem[0] = '_';  // not hidden, not "..", not an option
  return stem;
}

void write_dump(const std::string& dump_dir, const std::string& file, std::string_view text) {
  std::error_code ec;
  std::filesystem::create_directories(dump_dir, ec);
  const std::filesystem::path path = std::filesystem::path(dump_dir) / file;
  int error = 0;
  if (!ec) {
    std::ofstream out(path, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) error = errno != 0 ? errno : EIO;
  }
  if (ec || error != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "tl: dump_dir '" + dump_dir + "': cannot write " + path.string() + " (" +
                    (ec ? ec.message() : std::string(std::strerror(error))) + ")");
  }
}

}  // namespace tileops::tl
