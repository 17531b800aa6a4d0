// embedding on CPU: every id is checked first, so a bad id leaves out untouched; then each
// output row is one row copy of weight (a memcpy when both rows are contiguous), with the ids
// split over the thread pool.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "src/ops/contracts/embedding.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/strided_copy.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/embedding.decl.h).
constexpr int kInputIds = tensor_index(decls::embedding, "input_ids");
constexpr int kWeight = tensor_index(decls::embedding, "weight");
constexpr int kOut = tensor_index(decls::embedding, "out");

constexpr std::int64_t kCheckChunk = 32768;          // ids per chunk of the range check
constexpr std::int64_t kCopyChunkBytes = 64 * 1024;  // bytes of rows per chunk of the copy

// The stride s with offset(row i) = i·s when the dims of (shape, strides) merge into one, else
// -1 (the rows then need RowOffsets).
std::int64_t uniform_stride(const Dims& shape, const Dims& strides) {
  std::int64_t stride = -1;
  std::int64_t extent = 1;  // of the dims merged so far, innermost first
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (stride < 0) {
      stride = strides[d];
    } else if (strides[d] != stride * extent) {
      return -1;
    }
    extent *= shape[d];
  }
  return stride < 0 ? 1 : stride;
}

// A view of the ids as a flat list: element i at offset(i) in row-major order of their shape.
class IdList {
 public:
  explicit IdList(const TensorDesc& ids)
      : is_int64_(ids.dtype == DataType::kInt64),
        count_(ids.shape.product()),
        stride_(uniform_stride(ids.shape, ids.strides)),
        // RowOffsets numbers all dims but the last: a trailing dim of 1 makes every id a row.
        offsets_(with_unit_dim(ids.shape), with_unit_dim(ids.strides)) {}

  std::int64_t count() const { return count_; }
  std::int64_t at(const void* data, std::int64_t i) const {
    const std::int64_t offset = stride_ >= 0 ? i * stride_ : offsets_(i);
    return is_int64_ ? static_cast<const std::int64_t*>(data)[offset]
                     : static_cast<const std::int32_t*>(data)[offset];
  }

  // Index of the first id in [begin, end) outside [0, limit), or -1.
  std::int64_t first_bad(const void* data, std::int64_t begin, std::int64_t end,
                         std::int64_t limit) const {
    const auto bound = static_cast<std::uint64_t>(limit);
    if (stride_ == 1) {
      // Branch-free scan that the compiler vectorises; the slow search runs only on failure.
      bool bad = false;
      if (is_int64_) {
        const auto* ids = static_cast<const std::int64_t*>(data);
        for (std::int64_t i = begin; i < end; ++i) {
          bad |= static_cast<std::uint64_t>(ids[i]) >= bound;
        }
      } else {
        const auto* ids = static_cast<const std::int32_t*>(data);
        for (std::int64_t i = begin; i < end; ++i) {
          bad |= static_cast<std::uint64_t>(static_cast<std::int64_t>(ids[i])) >= bound;
        }
      }
      if (!bad) return -1;
    }
    for (std::int64_t i = begin; i < end; ++i) {
      if (static_cast<std::uint64_t>(at(data, i)) >= bound) return i;
    }
    return -1;
  }

 private:
  static Dims with_unit_dim(Dims dims) {
    dims.push_back(1);
    return dims;
  }

  bool is_int64_;
  std::int64_t count_;
  std::int64_t stride_;
  RowOffsets offsets_;
};

class EmbeddingCpu final : public Operator {
 public:
  explicit EmbeddingCpu(const Problem& problem)
      : ids_(problem.tensors[kInputIds]),
        ids_shape_(problem.tensors[kInputIds].shape),
        num_embeddings_(problem.tensors[kWeight].shape[0]),
        width_(problem.tensors[kWeight].shape[1]),
        weight_row_stride_(problem.tensors[kWeight].strides[0]),
        weight_stride_(problem.tensors[kWeight].strides[1]),
        out_rows_(problem.tensors[kOut].shape, problem.tensors[kOut].strides),
        out_row_stride_(uniform_stride(ids_shape_, problem.tensors[kOut].strides)),
        out_stride_(problem.tensors[kOut].strides.back()),
        element_size_(size_of(problem.tensors[kWeight].dtype)) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const void* ids = tensors[kInputIds].data();
    const char* weight = static_cast<const char*>(tensors[kWeight].data());
    char* out = static_cast<char*>(tensors[kOut].data());
    ThreadPool& pool = ctx.threads();
    check_ids(ids, pool);
    if (width_ == 0) return;

    const auto bytes = static_cast<std::int64_t>(element_size_);
    const std::int64_t row_bytes = width_ * bytes;
    pool.parallel_range(
        ids_.count(), std::max<std::int64_t>(1, kCopyChunkBytes / row_bytes),
        [&](int, std::int64_t begin, std::int64_t end) {
          for (std::int64_t i = begin; i < end; ++i) {
            const std::int64_t row = out_row_stride_ >= 0 ? i * out_row_stride_ : out_rows_(i);
            copy_elements(weight + ids_.at(ids, i) * weight_row_stride_ * bytes, weight_stride_,
                          out + row * bytes, out_stride_, width_, element_size_);
          }
        });
  }

 private:
  // Throws naming the first id outside [0, num_embeddings), its position and the bound.
  void check_ids(const void* ids, ThreadPool& pool) const {
    std::atomic<std::int64_t> first_bad{ids_.count()};
    pool.parallel_range(ids_.count(), kCheckChunk, [&](int, std::int64_t begin, std::int64_t end) {
      const std::int64_t bad = ids_.first_bad(ids, begin, end, num_embeddings_);
      if (bad < 0) return;
      // Keep the smallest position (chunks finish in any order).
      std::int64_t seen = first_bad.load();
      while (bad < seen && !first_bad.compare_exchange_weak(seen, bad)) {
      }
    });
    const std::int64_t position = first_bad.load();
    if (position < ids_.count()) {
      Dims index;
      index.resize(ids_shape_.size());
      std::int64_t flat = position;
      for (int d = ids_shape_.size() - 1; d >= 0; --d) {
        index[d] = flat % ids_shape_[d];
        flat /= ids_shape_[d];
      }
      const std::string bound = std::to_string(num_embeddings_);
      throw_argument_error(
          ErrorKind::kInvalidArgument, "embedding", "input_ids",
          "ids in [0, " + bound + ") (num_embeddings = " + bound + ")",
          "id " + std::to_string(ids_.at(ids, position)) + " at index " + index.to_string());
    }
  }

  IdList ids_;
  Dims ids_shape_;
  std::int64_t num_embeddings_;
  std::int64_t width_;
  std::int64_t weight_row_stride_;
  std::int64_t weight_stride_;
  RowOffsets out_rows_;
  std::int64_t out_row_stride_;
  std::int64_t out_stride_;
  std::size_t element_size_;
};

}  // namespace

void register_embedding(std::vector<Implementation>& out) {
  out.push_back({"embedding", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<EmbeddingCpu>(p); }});
}

}  // namespace tileops::ops::cpu
