// Read-only access to a .safetensors file: an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets}} and the raw data, mapped into memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tileops/core/tensor.h"

namespace tileops::llama {

// Validates a whole .safetensors file held in `file_bytes` and returns its tensors as views into
// those bytes (writable only in type: the caller keeps them read-only and alive). Checked, with
// kInvalidArgument naming `file_name` and the tensor: the header length (within the file and at
// most 100 MiB), the header a JSON object, __metadata__ an object of strings, every entry an
// object with a known dtype, a shape of at most kMaxRank non-negative integers whose element and
// byte counts fit int64, and data_offsets [begin, end] with begin <= end, end inside the data
// section and end - begin the shape's byte count; no two tensors' bytes overlap.
std::map<std::string, Tensor> parse_safetensors(std::string_view file_bytes,
                                                const std::string& file_name);

class SafetensorsFile {
 public:
  // Maps the file and validates it with parse_safetensors.
  explicit SafetensorsFile(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // A view of the mapped bytes (read-only: the operators only read weights).
  Tensor tensor(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  void* mapping_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::string, Tensor> entries_;
};

// Writes tensors (contiguous, any dtype of the format) to a .safetensors file; used by tests
// and to export synthetic weights.
void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors);

}  // namespace tileops::llama
