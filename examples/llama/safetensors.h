// Read-only access to a .safetensors file: an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets}} and the raw data, mapped into memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tileops/core/tensor.h"

namespace tileops::llama {

class SafetensorsFile {
 public:
  // Maps the file and validates its header (dtypes, shapes, offsets inside the data section);
  // throws kInvalidArgument naming the file and the offending entry.
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
