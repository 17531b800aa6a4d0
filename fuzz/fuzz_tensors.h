// Fuzzed tensors for the operator harnesses: shapes, strides and dtypes decoded from the input
// (mostly near an operator's valid geometry, sometimes hostile), each backed by its own buffer
// of exactly the bytes its view spans, so that ASan sees any access outside it. Cases whose
// views span more than kMaxBytes are skipped: the harness must stay within a few MiB.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "tileops/core/error.h"
#include "tileops/core/tensor.h"

namespace tileops::fuzz {

inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 20;

// An extent: mostly 0..17, sometimes up to 63, sometimes near the int64 limits or negative.
std::int64_t fuzz_extent(FuzzInput& in);
// A raw stride: small, zero, huge or negative.
std::int64_t fuzz_stride(FuzzInput& in);
// Usually `usual`, sometimes any DataType.
DataType fuzz_dtype(FuzzInput& in, DataType usual);
// Usually `shape` itself; sometimes one extent changed, a dim added or dropped.
Dims mutate_shape(FuzzInput& in, Dims shape);
// Strides for `shape`: contiguous, padded, column-major, one broadcast dim, or raw values.
// Built in unsigned arithmetic: a wrapped result is a hostile stride for Tensor to refuse.
Dims fuzz_strides(FuzzInput& in, const Dims& shape);

// The bytes a view reaches, or -1 when that exceeds int64 (computed independently of tileops).
std::int64_t span_bytes(const Dims& shape, const Dims& strides, DataType dtype);

// Owns the buffers of one case and checks, after an operator ran, that it read its inputs only
// (their bytes unchanged) and wrote nothing but the elements of its outputs' views.
class Arena {
 public:
  explicit Arena(FuzzInput& in) : in_(in) {}

  // A tensor of `shape` (mutated) and `dtype` (usually) with fuzzed strides and contents.
  // nullopt when tileops refused the geometry (the case is done) or it is too large to back.
  std::optional<Tensor> input(const Dims& shape, DataType dtype);
  std::optional<Tensor> output(const Dims& shape, DataType dtype);
  // An int32 tensor of exactly `shape`, contiguous, with the given values (index arguments).
  Tensor int32_values(const std::vector<std::int32_t>& values, const Dims& shape);

  // Records every buffer's bytes; call right before the operator.
  void seal();
  // After a tileops::Error: the kind is one a user error may give, and the inputs are intact.
  void check_error(const Error& e) const;
  // After a run: inputs intact; in outputs, only bytes of view elements may have changed.
  void check_run() const;
  // Whether an output was placed inside an input's buffer (results are then not compared).
  bool aliased() const { return aliased_; }
  // Whether an output's view reaches any byte twice (self-overlap, which no reference covers).
  static bool self_overlapping(const Tensor& t);

 private:
  struct Buffer {
    std::unique_ptr<unsigned char[]> bytes;
    std::int64_t size = 0;
    bool output = false;
    Tensor view;
    std::vector<unsigned char> before;
  };
  std::optional<Tensor> make(const Dims& shape, DataType dtype, bool output);
  void fill(Buffer& b, DataType dtype);

  FuzzInput& in_;
  std::vector<Buffer> buffers_;
  bool aliased_ = false;
};

// Reads element `index` (in the view's row-major order) as a double; integers and floats only.
double element_as_double(const Tensor& t, std::int64_t index);
// The address of element `index` of the view in row-major order.
const unsigned char* element_address(const Tensor& t, std::int64_t index);

// Stops the fuzzer with a message: a finding.
[[noreturn]] void finding(const char* what, const std::string& detail);

}  // namespace tileops::fuzz
