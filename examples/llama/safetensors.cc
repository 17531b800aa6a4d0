#include "examples/llama/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "examples/llama/json_number.h"
#include "tileops/core/checked_size.h"
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

[[noreturn]] void bad_file(const std::string& file, const std::string& what) {
  throw Error(ErrorKind::kInvalidArgument, "safetensors: " + file + ": " + what);
}

// A name from the file, quoted with JSON escapes (it may hold any character).
std::string quoted(const std::string& name) {
  return nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The reference implementation's limit: a larger header is not a checkpoint.
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

// Errors about one tensor: "safetensors: <file>: tensor "<name>": <message>".
struct EntryError {
  std::string what;
  [[noreturn]] void operator()(const std::string& message) const {
    throw Error(ErrorKind::kInvalidArgument, what + ": " + message);
  }
};

struct ByteRange {
  std::uint64_t begin, end;
  const std::string* name;
};

// One tensor entry of the header, checked: {"dtype", "shape", "data_offsets"}.
Tensor parse_entry(const std::string& file, const std::string& name, const nlohmann::json& entry,
                   std::string_view data, std::vector<ByteRange>& ranges) {
  const std::string what = "safetensors: " + file + ": tensor " + quoted(name);
  const EntryError bad{what};
  if (!entry.is_object()) bad("expected an object {dtype, shape, data_offsets}");
  const auto field = [&](const char* key) -> const nlohmann::json& {
    const auto it = entry.find(key);
    if (it == entry.end()) bad(std::string("has no '") + key + "'");
    return *it;
  };
  const nlohmann::json& dtype_json = field("dtype");
  const std::optional<DataType> dtype =
      dtype_json.is_string() ? dtype_from_format(dtype_json.get<std::string>()) : std::nullopt;
  if (!dtype) bad("unsupported dtype " + json_excerpt(dtype_json));

  const nlohmann::json& shape_json = field("shape");
  if (!shape_json.is_array() || shape_json.size() > static_cast<std::size_t>(kMaxRank)) {
    bad("expected a shape of at most " + std::to_string(kMaxRank) + " dims, got " +
        json_excerpt(shape_json));
  }
  Dims shape;
  for (const nlohmann::json& d : shape_json) {
    const std::optional<std::int64_t> extent = json_int64(d);
    if (!extent || *extent < 0) {
      bad("expected non-negative integer dims, got shape " + json_excerpt(shape_json));
    }
    shape.push_back(*extent);
  }
  const std::int64_t bytes =
      checked_bytes(checked_product({shape.begin(), shape.end()}, what), size_of(*dtype), what);

  const nlohmann::json& offsets = field("data_offsets");
  std::optional<std::int64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = json_int64(offsets[0]);
    end = json_int64(offsets[1]);
  }
  if (!begin || !end || *begin < 0 || *begin > *end) {
    bad("expected data_offsets [begin, end] with 0 <= begin <= end, got " + json_excerpt(offsets));
  }
  const auto b = static_cast<std::uint64_t>(*begin), e = static_cast<std::uint64_t>(*end);
  if (e > data.size()) {
    bad("data_offsets end " + std::to_string(e) + " is past the data section (" +
        std::to_string(data.size()) + " bytes)");
  }
  if (e - b != static_cast<std::uint64_t>(bytes)) {
    bad("data_offsets " + json_excerpt(offsets) + " hold " + std::to_string(e - b) +
        " bytes; shape " + shape.to_string() + " of " + std::string(name_of(*dtype)) + " needs " +
        std::to_string(bytes));
  }
  if (b < e) ranges.push_back({b, e, &name});
  return Tensor(const_cast<char*>(data.data() + b), shape, *dtype);
}

}  // namespace

std::map<std::string, Tensor> parse_safetensors(std::string_view file_bytes,
                                                const std::string& file_name) {
  if (file_bytes.size() < 8) {
    bad_file(file_name, "shorter than the 8-byte header length (" +
                            std::to_string(file_bytes.size()) + " bytes)");
  }
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) {
    header_size = header_size << 8 | static_cast<unsigned char>(file_bytes[i]);
  }
  // Compared with what follows the length field, so 8 + header_size cannot overflow.
  if (header_size > file_bytes.size() - 8) {
    bad_file(file_name, "header length " + std::to_string(header_size) +
                            " runs past the end of the file (" +
                            std::to_string(file_bytes.size() - 8) + " bytes follow it)");
  }
  if (header_size > kMaxHeaderBytes) {
    bad_file(file_name, "header length " + std::to_string(header_size) + " exceeds " +
                            std::to_string(kMaxHeaderBytes) + " bytes");
  }
  const std::string_view header_text = file_bytes.substr(8, header_size);
  const std::string_view data = file_bytes.substr(8 + header_size);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text.begin(), header_text.end());
  } catch (const nlohmann::json::exception& e) {
    bad_file(file_name, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) {
    bad_file(file_name, "header is not a JSON object: " + json_excerpt(header));
  }
  std::map<std::string, Tensor> tensors;
  std::vector<ByteRange> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {  // free-form text, string to string
      if (!entry.is_object()) bad_file(file_name, "__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          bad_file(file_name, "__metadata__ value " + quoted(key) + " is not a string");
        }
      }
      continue;
    }
    tensors.emplace(name, parse_entry(file_name, name, entry, data, ranges));
  }
  // Sorted by start, a range overlaps an earlier one exactly when it starts before the furthest
  // end so far (empty ranges hold no bytes and were left out).
  std::sort(ranges.begin(), ranges.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  const ByteRange* furthest = nullptr;
  for (const ByteRange& r : ranges) {
    if (furthest != nullptr && r.begin < furthest->end) {
      bad_file(file_name, "tensors " + quoted(*furthest->name) + " and " + quoted(*r.name) +
                              " share bytes (data_offsets [" + std::to_string(furthest->begin) +
                              ", " + std::to_string(furthest->end) + "] and [" +
                              std::to_string(r.begin) + ", " + std::to_string(r.end) + "])");
    }
    if (furthest == nullptr || r.end > furthest->end) furthest = &r;
  }
  return tensors;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) bad_file(path.string(), std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    bad_file(path.string(), "not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {  // mmap refuses a length of 0; parse_safetensors then reports the file short
    mapping_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    bad_file(path.string(), std::string("mmap failed: ") + std::strerror(errno));
  }
  try {
    entries_ = parse_safetensors({static_cast<const char*>(mapping_), size_}, path.string());
  } catch (...) {
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
    mapping_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) bad_file(path_.string(), "has no tensor " + quoted(name));
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& entry : entries_) out.push_back(entry.first);
  return out;
}

void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (!t.is_contiguous() || header.contains(name)) {
      throw_argument_error(ErrorKind::kInvalidArgument, "write_safetensors", name,
                           "a contiguous tensor of a name given once", t.describe());
    }
    const std::int64_t bytes = checked_bytes(t.numel(), t.element_size(), "write_safetensors");
    const std::int64_t end = checked_add(offset, bytes, "write_safetensors");
    header[name] = {{"dtype", format_name(t.dtype())},
                    {"shape", std::vector<std::int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) bad_file(path.string(), "cannot create");
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& entry : tensors) {
    out.write(static_cast<const char*>(entry.second.data()),
              static_cast<std::streamsize>(entry.second.numel() * entry.second.element_size()));
  }
  if (!out) bad_file(path.string(), "write failed");
}

}  // namespace tileops::llama
