// examples/llama's .safetensors reader on malformed files, each built here as bytes: every
// class is an error naming the file and the tensor, never a view past the data or a wrapped size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "examples/llama/safetensors.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

// The 8-byte little-endian header length, the header and `data_bytes` zero bytes.
std::string file_bytes(const std::string& header, std::size_t data_bytes,
                       std::uint64_t header_length) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(header_length >> (8 * i)));
  return bytes + header + std::string(data_bytes, '\0');
}

std::string file_bytes(const std::string& header, std::size_t data_bytes) {
  return file_bytes(header, data_bytes, header.size());
}

// The bytes written to a file and opened with SafetensorsFile (which maps the file and calls
// parse_safetensors); `check` runs on the open file.
template <typename Check>
void with_file(const std::string& bytes, Check&& check) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tileops_safetensors_test_" + std::to_string(::getpid()) + ".safetensors");
  std::ofstream(path, std::ios::binary) << bytes;
  struct Cleanup {
    std::filesystem::path path;
    ~Cleanup() { std::filesystem::remove(path); }
  } cleanup{path};
  const SafetensorsFile file(path);
  check(file);
}

// Opening the file raises tileops::Error naming the file and every one of `words`.
void expect_rejected(const std::string& bytes, std::initializer_list<std::string> words) {
  SCOPED_TRACE(bytes.size() > 8 ? bytes.substr(8, 200) : bytes);
  try {
    with_file(bytes, [](const SafetensorsFile&) {});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << message;
    EXPECT_NE(message.find("tileops_safetensors_test_"), std::string::npos) << message;
    for (const std::string& w : words) EXPECT_NE(message.find(w), std::string::npos) << message;
  }
}

// (Appended piece by piece: GCC 12 warns about a false overlap in long `+` chains.)
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  std::string text = "\"";
  text.append(name).append("\": {\"dtype\": \"").append(dtype).append("\", \"shape\": ");
  return text.append(shape).append(", \"data_offsets\": ").append(offsets).append("}");
}

// A JSON object of the entries.
std::string object(std::initializer_list<std::string> entries) {
  std::string text = "{";
  for (const std::string& e : entries) text.append(text.size() > 1 ? ", " : "").append(e);
  return text.append("}");
}

TEST(Safetensors, ValidFileGivesViewsOfItsData) {
  const std::string header =
      object({"\"__metadata__\": {\"format\": \"pt\"}", entry("a", "F32", "[2, 3]", "[0, 24]"),
              entry("b", "BF16", "[4]", "[24, 32]"), entry("empty", "F16", "[0, 5]", "[32, 32]")});
  const std::string bytes = file_bytes(header, 32);
  const auto tensors = parse_safetensors(bytes, "x.safetensors");
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors.at("a").shape(), (Dims{2, 3}));
  EXPECT_EQ(tensors.at("a").data(), bytes.data() + 8 + header.size());
  EXPECT_EQ(tensors.at("b").data(), bytes.data() + 8 + header.size() + 24);
  EXPECT_EQ(tensors.at("empty").numel(), 0);
  with_file(bytes, [](const SafetensorsFile& f) { EXPECT_EQ(f.names().size(), 3u); });
}

// Both tensors were handed out as views of the same bytes.
TEST(Safetensors, OverlappingTensorsAreRejected) {
  expect_rejected(
      file_bytes(object({entry("a", "F32", "[4]", "[0, 16]"), entry("b", "F32", "[2]", "[8, 16]")}),
                 16),
      {"\"a\"", "\"b\"", "share bytes"});
  expect_rejected(
      file_bytes(object({entry("a", "U8", "[16]", "[0, 16]"), entry("b", "U8", "[1]", "[4, 5]"),
                         entry("c", "U8", "[2]", "[15, 17]")}),
                 17),
      {"share bytes"});
  // Empty tensors hold no bytes: one at another's offset overlaps nothing.
  with_file(
      file_bytes(object({entry("a", "F32", "[4]", "[0, 16]"), entry("e", "F32", "[0]", "[8, 8]")}),
                 16),
      [](const SafetensorsFile& f) { EXPECT_TRUE(f.contains("e")); });
}

// [-4, -4] passed the size check as 16 elements.
TEST(Safetensors, NegativeDimsAreRejected) {
  expect_rejected(file_bytes(object({entry("w", "F32", "[-4, -4]", "[0, 64]")}), 64),
                  {"\"w\"", "non-negative"});
  expect_rejected(file_bytes(object({entry("w", "F32", "[18446744073709551612]", "[0, 16]")}), 16),
                  {"\"w\"", "non-negative"});  // 2^64 - 4 wrapped to -4
}

// [2^32, 2^32, 4] wrapped to 0 elements, matching 0 bytes of data.
TEST(Safetensors, ElementCountOverflowIsRejected) {
  expect_rejected(
      file_bytes(object({entry("w", "F32", "[4294967296, 4294967296, 4]", "[0, 0]")}), 0),
      {"\"w\"", "overflows int64"});
  expect_rejected(file_bytes(object({entry("w", "F64", "[2305843009213693952]", "[0, 0]")}), 0),
                  {"\"w\"", "overflows int64"});  // 2^61 elements of 8 bytes
}

// Rank 9 was an error without the file's name.
TEST(Safetensors, RankAboveTheLimitIsRejected) {
  expect_rejected(
      file_bytes(object({entry("w", "U8", "[1, 1, 1, 1, 1, 1, 1, 1, 1]", "[0, 1]")}), 1),
      {"\"w\"", "at most 8 dims"});
}

TEST(Safetensors, BadDataOffsetsAreRejected) {
  const auto one = [](const std::string& offsets, std::size_t data) {
    return file_bytes(object({entry("w", "F32", "[4]", offsets)}), data);
  };
  expect_rejected(one("[16, 0]", 16), {"\"w\"", "begin <= end"});
  expect_rejected(one("[0, 32]", 16), {"\"w\"", "past the data section"});
  expect_rejected(one("[0, 12]", 16), {"\"w\"", "needs 16"});
  expect_rejected(one("[0.5, 16.5]", 17), {"\"w\"", "data_offsets"});  // were truncated
  expect_rejected(one("[-16, 0]", 16), {"\"w\"", "data_offsets"});
  expect_rejected(one("[0, 16, 32]", 32), {"\"w\"", "data_offsets"});
  expect_rejected(one("[0, 18446744073709551615]", 16), {"\"w\"", "data_offsets"});
}

TEST(Safetensors, MalformedEntriesAreRejected) {
  expect_rejected(file_bytes(object({entry("w", "Q4", "[4]", "[0, 4]")}), 4), {"\"w\"", "dtype"});
  expect_rejected(file_bytes(R"({"w": 5})", 0), {"\"w\"", "object"});
  expect_rejected(file_bytes(R"({"w": {"dtype": "F32", "shape": [1]}})", 4),
                  {"\"w\"", "data_offsets"});
  expect_rejected(file_bytes(R"({"w": {"dtype": "F32", "shape": 1, "data_offsets": [0, 4]}})", 4),
                  {"\"w\"", "shape"});
  expect_rejected(file_bytes(object({entry("w", "F32", "[1.5]", "[0, 4]")}), 4),
                  {"\"w\"", "shape"});
}

TEST(Safetensors, BadHeadersAreRejected) {
  const std::string header = object({entry("w", "U8", "[4]", "[0, 4]")});
  expect_rejected(file_bytes(header, 4, header.size() + 100), {"header length"});
  expect_rejected(file_bytes(header, 4, ~std::uint64_t{0}), {"header length"});  // 8 + it wraps
  expect_rejected(file_bytes(header, 4, std::uint64_t{1} << 63), {"header length"});
  expect_rejected(std::string("\x04\0\0", 3), {"8-byte"});
  expect_rejected("", {"8-byte"});
  expect_rejected(file_bytes("{\"w\": ", 0), {"JSON"});
  // A list of entries was read as tensors "0", "1", ...
  expect_rejected(file_bytes("[{\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}]", 4),
                  {"object"});
  expect_rejected(
      file_bytes(object({"\"__metadata__\": [1]", entry("w", "U8", "[4]", "[0, 4]")}), 4),
      {"__metadata__"});
  expect_rejected(file_bytes("{\"__metadata__\": {\"k\": 1}}", 0), {"__metadata__", "\"k\""});
}

TEST(Safetensors, NamesWithLineBreaksAreQuoted) {
  try {
    (void)parse_safetensors(file_bytes(object({entry("a\\nb", "Q4", "[1]", "[0, 1]")}), 1),
                            "f.safetensors");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("f.safetensors"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tileops::llama
