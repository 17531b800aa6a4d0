// The checkpoint loader's pure entry points: parse_safetensors (a whole .safetensors file) and
// parse_config_json (a config.json text). Byte 0 chooses; the rest is the file. A parse must end
// in a tileops::Error of kind InvalidArgument that names the file, or in views that lie inside
// the data section, do not overlap and hold exactly their shape's bytes (all of which are read,
// for ASan), or in a Config that validate() accepts.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "examples/llama/config.h"
#include "examples/llama/safetensors.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_tensors.h"

namespace tileops::fuzz {
namespace {

void named_error(const Error& e, const std::string& file) {
  if (e.kind() != ErrorKind::kInvalidArgument && e.kind() != ErrorKind::kInvalidType) {
    finding("loader error kind", e.what());
  }
  if (std::string_view(e.what()).find(file) == std::string_view::npos) {
    finding("loader error without the file name", e.what());
  }
}

void safetensors(std::string_view file) {
  const std::string name = "fuzz.safetensors";
  std::map<std::string, Tensor> tensors;
  try {
    tensors = llama::parse_safetensors(file, name);
  } catch (const Error& e) {
    named_error(e, name);
    return;
  }
  std::uint64_t header = 0;
  if (file.size() < 8) finding("safetensors accepted a file without a header length", "");
  std::memcpy(&header, file.data(), 8);
  const char* data_begin = file.data() + 8 + header;
  const char* file_end = file.data() + file.size();
  std::vector<std::pair<const char*, const char*>> ranges;
  unsigned checksum = 0;
  for (const auto& [tensor_name, t] : tensors) {
    if (!t.is_contiguous()) finding("safetensors view not contiguous", tensor_name);
    const auto* begin = static_cast<const char*>(t.data());
    const std::int64_t bytes = t.numel() * static_cast<std::int64_t>(t.element_size());
    if (bytes == 0) continue;
    if (begin < data_begin || begin > file_end || bytes > file_end - begin) {
      finding("safetensors view outside the data section", tensor_name + " " + t.describe());
    }
    for (std::int64_t i = 0; i < bytes; ++i) checksum += static_cast<unsigned char>(begin[i]);
    ranges.emplace_back(begin, begin + bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) finding("safetensors views overlap", "");
  }
  if (checksum == 0xFFFFFFFFu) std::abort();  // keeps the reads
}

void config(std::string_view text) {
  const std::string name = "fuzz/config.json";
  llama::Config c;
  try {
    c = llama::parse_config_json(text, name, llama::Config{});
  } catch (const Error& e) {
    named_error(e, name);
    return;
  }
  try {
    c.validate();
    (void)c.qkv_size();
    (void)c.describe();
  } catch (const Error& e) {
    finding("parse_config_json returned a Config that validate() refuses", e.what());
  }
}

}  // namespace
}  // namespace tileops::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tileops::fuzz::FuzzInput in(data, size);
  const bool is_config = in.flag();
  // A copy of exactly the file's bytes, so that ASan sees a read past its end.
  const std::string_view rest = in.rest();
  std::vector<char> file(rest.begin(), rest.end());
  const std::string_view bytes(file.data(), file.size());
  if (is_config) {
    tileops::fuzz::config(bytes);
  } else {
    tileops::fuzz::safetensors(bytes);
  }
  return 0;
}
