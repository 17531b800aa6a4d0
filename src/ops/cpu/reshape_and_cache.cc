// reshape_and_cache on CPU: every slot is checked first (a bad one leaves the caches untouched);
// then tokens are split over the thread pool and each token's key and value rows are copied
// into their slot (one memcpy per row when the heads are contiguous), or quantised into an fp8
// cache.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/ops/contracts/reshape_and_cache.decl.h"
#include "src/ops/cpu/cast_element.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/strided_copy.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/reshape_and_cache.decl.h).
constexpr int kKey = tensor_index(decls::reshape_and_cache, "key");
constexpr int kValue = tensor_index(decls::reshape_and_cache, "value");
constexpr int kKeyCache = tensor_index(decls::reshape_and_cache, "key_cache");
constexpr int kValueCache = tensor_index(decls::reshape_and_cache, "value_cache");
constexpr int kSlotMapping = tensor_index(decls::reshape_and_cache, "slot_mapping");
constexpr int kKScale = tensor_index(decls::reshape_and_cache, "k_scale");
constexpr int kVScale = tensor_index(decls::reshape_and_cache, "v_scale");
// Key then value: the rows given, the cache they go to and its scale.
constexpr int kRows[] = {kKey, kValue};
constexpr int kCaches[] = {kKeyCache, kValueCache};
constexpr int kScales[] = {kKScale, kVScale};

// A [Hkv, D] block at some base: head stride and element stride; a split cache's D runs in
// pieces of `split` elements `split_stride` apart (split 0: one piece).
struct Block {
  std::int64_t heads;
  std::int64_t width;
  std::int64_t head_stride;
  std::int64_t element_stride;
  std::int64_t split = 0;
  std::int64_t split_stride = 0;

  bool dense() const {
    return element_stride == 1 && (split == 0 || split_stride == split) &&
           (heads == 1 || head_stride == width);
  }
};

// Copies one token's [Hkv, D] block between two layouts of the same dtype.
void copy_block(const char* src, const Block& from, char* dst, const Block& to,
                std::size_t element_size) {
  const auto bytes = static_cast<std::int64_t>(element_size);
  if (from.dense() && to.dense()) {
    copy_elements(src, 1, dst, 1, from.heads * from.width, element_size);
    return;
  }
  // Only caches are split: `from` is a row of the input.
  const std::int64_t piece = to.split != 0 ? to.split : from.width;
  for (std::int64_t h = 0; h < from.heads; ++h) {
    for (std::int64_t p = 0; p * piece < from.width; ++p) {
      copy_elements(src + (h * from.head_stride + p * piece * from.element_stride) * bytes,
                    from.element_stride, dst + (h * to.head_stride + p * to.split_stride) * bytes,
                    to.element_stride, piece, element_size);
    }
  }
}

// One token's [Hkv, D] block of float rows into an 8-bit float cache: fp8(float(x) / scale),
// rounded to nearest even and saturating at the format's largest finite value, NaN kept (vLLM's
// conversion, CUDA's __NV_SATFINITE). `row` holds D floats.
void quantise_block(const char* src, const Block& from, DataType from_dtype, char* dst,
                    const Block& to, DataType to_dtype, float scale, float* row) {
  constexpr float kE5M2Max = 57344.0f;
  const auto in_bytes = static_cast<std::int64_t>(size_of(from_dtype));
  const std::int64_t piece = to.split != 0 ? to.split : from.width;
  auto* out = reinterpret_cast<std::uint8_t*>(dst);
  for (std::int64_t h = 0; h < from.heads; ++h) {
    load_f32(src + h * from.head_stride * in_bytes, from_dtype, from.element_stride, from.width,
             row);
    std::uint8_t* head = out + h * to.head_stride;
    for (std::int64_t c = 0; c < from.width; ++c) {
      const float v = row[c] / scale;
      head[c / piece * to.split_stride + c % piece * to.element_stride] =
          to_dtype == DataType::kFloat8E4M3FN
              ? cast_element::float_to_e4m3fn(v)
              : cast_element::float_to_e5m2(std::clamp(v, -kE5M2Max, kE5M2Max));
    }
  }
}

class ReshapeAndCacheCpu final : public Operator {
 public:
  explicit ReshapeAndCacheCpu(const Problem& p)
      : tokens_(p.tensors[kSlotMapping].shape[0]),
        slots_int64_(p.tensors[kSlotMapping].dtype == DataType::kInt64),
        slot_stride_(p.tensors[kSlotMapping].strides[0]),
        block_size_(p.tensors[kKeyCache].shape[1]),
        num_slots_(p.tensors[kKeyCache].shape[0] * p.tensors[kKeyCache].shape[1]) {
    for (int i = 0; i < 2; ++i) {
      const TensorDesc& rows = p.tensors[kRows[i]];
      const TensorDesc& cache = p.tensors[kCaches[i]];
      rows_[i] = {rows.shape[1], rows.shape[2], rows.strides[1], rows.strides[2], 0, 0};
      token_stride_[i] = rows.strides[0];
      row_dtype_[i] = rows.dtype;
      cache_dtype_[i] = cache.dtype;
      width_ = std::max<std::int64_t>(width_, rows.shape[2]);
      const bool split = cache.shape.size() == 5;
      cache_[i] = {cache.shape[2],
                   rows.shape[2],
                   cache.strides[2],
                   cache.strides[split ? 4 : 3],
                   split ? cache.shape[4] : 0,
                   split ? cache.strides[3] : 0};
      block_stride_[i] = cache.strides[0];
      slot_in_block_stride_[i] = cache.strides[1];
      row_bytes_ =
          std::max<std::int64_t>(row_bytes_, rows.shape[1] * rows.shape[2] *
                                                 static_cast<std::int64_t>(size_of(rows.dtype)));
    }
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& slots = tensors[kSlotMapping];
    check_slots(slots);
    float scales[2] = {1.0f, 1.0f};  // none: 1
    for (int i = 0; i < 2; ++i) {
      const Tensor& scale = tensors[kScales[i]];
      if (scale.data() != nullptr) scales[i] = *scale.data_as<const float>();
    }
    ctx.threads().parallel_range(
        tokens_, std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(1, row_bytes_)),
        [&](int, std::int64_t begin, std::int64_t end) {
          std::vector<float> row(static_cast<std::size_t>(width_));
          for (std::int64_t t = begin; t < end; ++t) {
            const std::int64_t slot = slot_of(slots, t);
            if (slot < 0) continue;  // -1: a padding token
            const std::int64_t block = slot / block_size_;
            const std::int64_t offset = slot % block_size_;
            for (int i = 0; i < 2; ++i) {
              const Tensor& rows = tensors[kRows[i]];
              const Tensor& cache = tensors[kCaches[i]];
              const auto* src = static_cast<const char*>(element_at(rows, t * token_stride_[i]));
              auto* dst = static_cast<char*>(
                  element_at(cache, block * block_stride_[i] + offset * slot_in_block_stride_[i]));
              if (cache_dtype_[i] == row_dtype_[i]) {
                copy_block(src, rows_[i], dst, cache_[i], rows.element_size());
              } else {
                quantise_block(src, rows_[i], row_dtype_[i], dst, cache_[i], cache_dtype_[i],
                               scales[i], row.data());
              }
            }
          }
        });
  }

 private:
  std::int64_t slot_of(const Tensor& slots, std::int64_t t) const {
    return slots_int64_ ? slots.data_as<std::int64_t>()[t * slot_stride_]
                        : slots.data_as<std::int32_t>()[t * slot_stride_];
  }

  // Throws naming the first slot outside {-1} ∪ [0, num_blocks·block_size) and its token.
  void check_slots(const Tensor& slots) const {
    for (std::int64_t t = 0; t < tokens_; ++t) {
      const std::int64_t slot = slot_of(slots, t);
      if (slot < -1 || slot >= num_slots_) {
        throw_argument_error(ErrorKind::kInvalidArgument, "reshape_and_cache", "slot_mapping",
                             "slots in [0, " + std::to_string(num_slots_) +
                                 ") (num_blocks * block_size) or -1 (skip)",
                             "slot " + std::to_string(slot) + " at token " + std::to_string(t));
      }
    }
  }

  std::int64_t tokens_;
  bool slots_int64_;
  std::int64_t slot_stride_;
  std::int64_t block_size_;
  std::int64_t num_slots_;
  std::int64_t row_bytes_ = 0;
  std::int64_t width_ = 0;  // the widest row (D) of key and value
  DataType row_dtype_[2]{};
  DataType cache_dtype_[2]{};
  Block rows_[2]{};
  Block cache_[2]{};
  std::int64_t token_stride_[2]{};
  std::int64_t block_stride_[2]{};
  std::int64_t slot_in_block_stride_[2]{};
};

}  // namespace

void register_reshape_and_cache(std::vector<Implementation>& out) {
  out.push_back({"reshape_and_cache", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<ReshapeAndCacheCpu>(p); }});
}

}  // namespace tileops::ops::cpu
