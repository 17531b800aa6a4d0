#include "tileops/core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tileops/core/checked_size.h"
#include "tileops/core/data_type.h"
#include "tileops/core/error.h"
#include "tileops/core/tensor_storage.h"

namespace tileops {
namespace {

TEST(DataType, NamesRoundTripAndSizes) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const auto dtype = static_cast<DataType>(i);
    EXPECT_EQ(parse_data_type(name_of(dtype)), dtype);
    EXPECT_GE(size_of(dtype), 1u);
  }
  EXPECT_EQ(size_of(DataType::kBFloat16), 2u);
  EXPECT_EQ(size_of(DataType::kFloat8E4M3FN), 1u);
  EXPECT_EQ(parse_data_type("bf16"), DataType::kBFloat16);
  EXPECT_FALSE(parse_data_type("float128").has_value());
  EXPECT_TRUE(is_floating(DataType::kHiFloat8));
  EXPECT_FALSE(is_floating(DataType::kInt32));
  EXPECT_TRUE(is_integral(DataType::kUInt8));
  EXPECT_FALSE(is_integral(DataType::kBool));
}

TEST(Dims, BasicsAndLimits) {
  Dims d{2, 3, 4};
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d.product(), 24);
  EXPECT_EQ(d.to_string(), "[2, 3, 4]");
  d.insert(0, 5);
  EXPECT_EQ(d, (Dims{5, 2, 3, 4}));
  d.erase(1);
  EXPECT_EQ(d, (Dims{5, 3, 4}));
  EXPECT_EQ(contiguous_strides(Dims{2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(Dims{}.product(), 1);
  EXPECT_THROW((Dims{1, 1, 1, 1, 1, 1, 1, 1, 1}), Error);
}

TEST(Tensor, ViewsAndContiguity) {
  float data[24];
  Tensor t(data, Dims{2, 3, 4}, DataType::kFloat32);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(0), 12);
  Tensor tr = t.transpose(0, 2);
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.shape(), (Dims{4, 3, 2}));
  Tensor s = t.slice(1, 1, 2);
  EXPECT_EQ(s.data(), data + 4);
  EXPECT_EQ(s.shape(), (Dims{2, 2, 4}));
  EXPECT_FALSE(s.is_contiguous());
  const std::int64_t index[] = {1, 2, 3};
  EXPECT_EQ(t.element_ptr(index), data + 23);
  EXPECT_THROW(t.size(3), Error);
  EXPECT_THROW(t.slice(0, 1, 2), Error);
  EXPECT_THROW(Tensor(data, Dims{2, 3}, Dims{1}, DataType::kFloat32), Error);
  EXPECT_THROW(Tensor(data, Dims{2}, Dims{-1}, DataType::kFloat32), Error);
  EXPECT_EQ(t.describe(), "float32[2, 3, 4]");
}

TEST(TensorStorage, SizedForStridedViews) {
  TensorStorage s(Dims{3, 4}, Dims{10, 2}, DataType::kFloat16);
  EXPECT_EQ(s.bytes(), (2 * 10 + 3 * 2 + 1) * 2u);
  EXPECT_EQ(s.view().strides(), (Dims{10, 2}));
  TensorStorage empty(Dims{0, 5}, DataType::kFloat32);
  EXPECT_EQ(empty.bytes(), 0u);
}

// Small storage is 64-byte aligned; 64 MiB and more starts on a 2 MiB (huge page) boundary and
// is fully usable (the rounding up to whole pages is past the end of bytes()).
TEST(TensorStorage, LargeAllocationsAreHugePageAligned) {
  TensorStorage small(Dims{3}, DataType::kFloat32);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % 64, 0u);
  const std::int64_t n = (std::int64_t{64} << 20) + 3;
  TensorStorage large(Dims{n}, DataType::kUInt8);
  EXPECT_EQ(large.bytes(), static_cast<std::size_t>(n));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % (std::uintptr_t{2} << 20), 0u);
  large.fill_bytes(0x5A);
  EXPECT_EQ(static_cast<const unsigned char*>(large.data())[n - 1], 0x5A);
}

// Sizes beyond int64 are refused where a view or an allocation is formed, never wrapped: a
// wrapped count once sized a 64-byte buffer for 2^63 bytes.
TEST(CheckedSize, OverflowIsAnInvalidArgumentNamingTheCaller) {
  const auto expect_overflow = [](const auto& make) {
    try {
      make();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
    }
  };
  const std::int64_t big = std::int64_t{1} << 60;
  expect_overflow([&] { TensorStorage s(Dims{big, 8}, DataType::kFloat32); });
  expect_overflow([&] { TensorStorage s(Dims{big}, Dims{16}, DataType::kFloat32); });
  expect_overflow([&] { Tensor t(nullptr, Dims{big, 16}, DataType::kUInt8); });
  // numel wraps to 0 here; the stride-0 span is one element.
  expect_overflow([&] {
    Tensor t(nullptr, Dims{std::int64_t{1} << 32, std::int64_t{1} << 32}, Dims{0, 0},
             DataType::kFloat32);
  });
  // numel fits, numel * element size does not.
  expect_overflow([&] { Tensor t(nullptr, Dims{big}, Dims{0}, DataType::kFloat64); });
  expect_overflow([&] { checked_mul(std::int64_t{1} << 62, 3, "probe"); });
  expect_overflow([&] { checked_add(INT64_MAX, 1, "probe"); });
  EXPECT_EQ(checked_product(std::vector<std::int64_t>{big, big, 0}, "probe"), 0);
  EXPECT_EQ(Tensor(nullptr, Dims{big, 0}, DataType::kFloat32).numel(), 0);
  try {
    checked_mul(std::int64_t{1} << 40, std::int64_t{1} << 40, "pack_linear_weight: argument 'w'");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "pack_linear_weight: argument 'w': 1099511627776 * 1099511627776 overflows int64");
  }
}

// An empty view covers no element, so it is contiguous whatever its strides (the safetensors
// loader's views of [5, 0] tensors were not, by the old count).
TEST(Tensor, EmptyViewsAreContiguous) {
  EXPECT_TRUE(Tensor(nullptr, Dims{5, 0}, DataType::kInt64).is_contiguous());
  EXPECT_TRUE(Tensor(nullptr, Dims{0, 3}, Dims{7, 2}, DataType::kFloat32).is_contiguous());
  EXPECT_FALSE(Tensor(nullptr, Dims{2, 3}, Dims{1, 2}, DataType::kFloat32).is_contiguous());
}

TEST(Error, MessageNamesEverything) {
  try {
    throw_argument_error(ErrorKind::kInvalidType, "rms_norm", "weight", "dtype float32", "int8");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidType);
    EXPECT_STREQ(e.what(), "rms_norm: argument 'weight': expected dtype float32, got int8");
  }
}

}  // namespace
}  // namespace tileops
