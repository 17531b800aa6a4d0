#include "examples/llama/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

struct FormatType {
  const char* name;
  DataType dtype;
};
constexpr FormatType kFormatTypes[] = {{"F32", DataType::kFloat32},
                                       {"F16", DataType::kFloat16},
                                       {"BF16", DataType::kBFloat16},
                                       {"F64", DataType::kFloat64},
                                       {"I64", DataType::kInt64},
                                       {"I32", DataType::kInt32},
                                       {"I16", DataType::kInt16},
                                       {"I8", DataType::kInt8},
                                       {"U8", DataType::kUInt8},
                                       {"BOOL", DataType::kBool},
                                       {"F8_E4M3", DataType::kFloat8E4M3FN},
                                       {"F8_E5M2", DataType::kFloat8E5M2}};

std::optional<DataType> dtype_from_format(const std::string& name) {
  for (const FormatType& t : kFormatTypes) {
    if (name == t.name) return t.dtype;
  }
  return std::nullopt;
}

const char* format_name(DataType dtype) {
  for (const FormatType& t : kFormatTypes) {
    if (t.dtype == dtype) return t.name;
  }
  throw Error(ErrorKind::kInvalidType,
              "safetensors: dtype " + std::string(name_of(dtype)) + " has no safetensors name");
}

[[noreturn]] void bad_file(const std::filesystem::path& path, const std::string& what) {
  throw Error(ErrorKind::kInvalidArgument, "safetensors: " + path.string() + ": " + what);
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) bad_file(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 8) {
    ::close(fd);
    bad_file(path, "shorter than the 8-byte header length");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  mapping_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    bad_file(path, std::string("mmap failed: ") + std::strerror(errno));
  }
  try {
    const auto* bytes = static_cast<const unsigned char*>(mapping_);
    std::uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = header_size << 8 | bytes[i];
    if (header_size > size_ - 8) bad_file(path, "header length runs past the end of the file");
    const std::size_t data_begin = 8 + header_size;
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(bytes + 8, bytes + data_begin);
    } catch (const nlohmann::json::exception& e) {
      bad_file(path, std::string("header is not valid JSON: ") + e.what());
    }
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      try {
        const auto dtype = dtype_from_format(entry.at("dtype").get<std::string>());
        if (!dtype) bad_file(path, "tensor '" + name + "' has an unsupported dtype");
        const auto shape_values = entry.at("shape").get<std::vector<std::int64_t>>();
        const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
        const Dims shape{std::span<const std::int64_t>(shape_values)};
        const std::uint64_t expected =
            static_cast<std::uint64_t>(shape.product()) * size_of(*dtype);
        if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > size_ - data_begin ||
            offsets[1] - offsets[0] != expected) {
          bad_file(path, "tensor '" + name +
                             "' has data_offsets outside the data section or "
                             "not matching its shape");
        }
        auto* data = const_cast<unsigned char*>(bytes + data_begin + offsets[0]);
        entries_.emplace(name, Tensor(data, shape, *dtype));
      } catch (const nlohmann::json::exception& e) {
        bad_file(path, "tensor '" + name + "' has a malformed entry: " + e.what());
      }
    }
  } catch (...) {
    ::munmap(mapping_, size_);
    mapping_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) bad_file(path_, "has no tensor '" + name + "'");
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry.first);
  return out;
}

void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (!t.is_contiguous()) {
      throw_argument_error(ErrorKind::kInvalidArgument, "write_safetensors", name,
                           "a contiguous tensor", t.describe());
    }
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
    header[name] = {{"dtype", format_name(t.dtype())},
                    {"shape", std::vector<std::int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) bad_file(path, "cannot create");
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& entry : tensors) {
    out.write(static_cast<const char*>(entry.second.data()),
              static_cast<std::streamsize>(entry.second.numel() * entry.second.element_size()));
  }
  if (!out) bad_file(path, "write failed");
}

}  // namespace tileops::llama
