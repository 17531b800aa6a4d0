// FuzzInput: reads typed values from libFuzzer's bytes; past the end every read returns 0, so
// any input decodes to something (short inputs to small, plain cases).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tileops::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  template <typename T>
  T value() {
    T v{};
    unsigned char raw[sizeof(T)] = {};
    for (unsigned char& b : raw) b = byte();
    std::memcpy(&v, raw, sizeof(T));
    return v;
  }
  // A value in [0, n) (n > 0).
  int below(int n) { return static_cast<int>(byte() % n); }
  bool flag() { return (byte() & 1) != 0; }
  // The unread rest (consumes it).
  std::string_view rest() {
    std::string_view r(reinterpret_cast<const char*>(data_) + pos_, size_ - pos_);
    pos_ = size_;
    return r;
  }
  bool empty() const { return pos_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace tileops::fuzz
