// Dims: a small fixed-capacity list of extents or strides (no heap allocation per tensor).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace tileops {

inline constexpr int kMaxRank = 8;

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<std::int64_t> values);  // throws when more than kMaxRank
  explicit Dims(std::span<const std::int64_t> values);

  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t operator[](int i) const { return values_[i]; }
  std::int64_t& operator[](int i) { return values_[i]; }
  const std::int64_t* begin() const { return values_.data(); }
  const std::int64_t* end() const { return values_.data() + size_; }
  std::int64_t* begin() { return values_.data(); }
  std::int64_t* end() { return values_.data() + size_; }
  std::int64_t back() const { return values_[size_ - 1]; }

  void push_back(std::int64_t value);  // throws when full
  void insert(int pos, std::int64_t value);
  void erase(int pos);
  void resize(int size, std::int64_t fill = 0);
  std::int64_t product() const;

  friend bool operator==(const Dims& a, const Dims& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

  std::string to_string() const;  // "[2, 3, 4]"

 private:
  std::array<std::int64_t, kMaxRank> values_{};
  int size_ = 0;
};

// Row-major contiguous strides (in elements) for a shape.
Dims contiguous_strides(const Dims& shape);

}  // namespace tileops
