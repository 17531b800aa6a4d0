// swap_blocks and copy_blocks on CPU: each mapping row copies one block (an entry of dim 0, any
// strides) through a CopyPlan made once per geometry. Rows run in order, so a later row sees
// what an earlier one wrote (a chain a -> b -> c, a repeated destination: the last row wins);
// each block's elements are split over the threads.
#include <algorithm>
#include <memory>

#include "src/ops/contracts/copy_blocks.decl.h"
#include "src/ops/contracts/swap_blocks.decl.h"
#include "src/ops/cpu/copy_plan.h"
#include "src/ops/cpu/register.h"
#include "src/ops/framework/attention_layout.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declarations.
constexpr int kSrc = tensor_index(decls::swap_blocks, "src");
constexpr int kDst = tensor_index(decls::swap_blocks, "dst");
constexpr int kSwapMapping = tensor_index(decls::swap_blocks, "block_mapping");
constexpr int kCache = tensor_index(decls::copy_blocks, "cache");
constexpr int kCopyMapping = tensor_index(decls::copy_blocks, "block_mapping");

// Blocks below this many bytes are copied on one thread: waking the pool would cost more.
constexpr std::int64_t kParallelBlockBytes = 1 << 18;

Dims block_of(const Dims& dims) {
  Dims block;
  for (int i = 1; i < dims.size(); ++i) block.push_back(dims[i]);
  return block;
}

class BlockCopyCpu final : public Operator {
 public:
  // src and dst: the tensor indices of the source and destination (the same for copy_blocks),
  // then the mapping's.
  BlockCopyCpu(const Problem& problem, int src, int dst, int mapping)
      : src_(src), dst_(dst), mapping_(mapping) {
    const TensorDesc& s = problem.tensors[src];
    const TensorDesc& d = problem.tensors[dst];
    plan_ = plan_copy(block_of(s.shape), block_of(s.strides), block_of(d.strides));
    element_size_ = size_of(s.dtype);
    const auto bytes = static_cast<std::int64_t>(element_size_);
    src_block_bytes_ = s.strides[0] * bytes;
    dst_block_bytes_ = d.strides[0] * bytes;
    // Element ranges of at least kParallelBlockBytes per thread.
    min_chunk_ = std::max<std::int64_t>(1, kParallelBlockBytes / bytes);
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& mapping = tensors[mapping_];
    if (mapping.size(0) == 0 || plan_.numel == 0) return;
    const char* src = static_cast<const char*>(tensors[src_].data());
    char* dst = static_cast<char*>(tensors[dst_].data());
    ThreadPool& pool = ctx.threads();
    for (std::int64_t i = 0; i < mapping.size(0); ++i) {
      const std::int64_t from = index_at(mapping, i, 0);
      const std::int64_t to = index_at(mapping, i, 1);
      if (src_ == dst_ && from == to) continue;  // a block onto itself
      const char* block_src = src + from * src_block_bytes_;
      char* block_dst = dst + to * dst_block_bytes_;
      pool.parallel_range(plan_.numel, min_chunk_, [&](int, std::int64_t begin, std::int64_t end) {
        copy_range(plan_, block_src, block_dst, begin, end, element_size_);
      });
    }
  }

 private:
  int src_, dst_, mapping_;
  CopyPlan plan_;
  std::size_t element_size_ = 0;
  std::int64_t src_block_bytes_ = 0;
  std::int64_t dst_block_bytes_ = 0;
  std::int64_t min_chunk_ = 1;
};

}  // namespace

void register_block_copies(std::vector<Implementation>& out) {
  out.push_back({"swap_blocks", DeviceType::kCpu, 0, "native", [](const Problem& p) {
                   return std::make_unique<BlockCopyCpu>(p, kSrc, kDst, kSwapMapping);
                 }});
  out.push_back({"copy_blocks", DeviceType::kCpu, 0, "native", [](const Problem& p) {
                   return std::make_unique<BlockCopyCpu>(p, kCache, kCache, kCopyMapping);
                 }});
}

}  // namespace tileops::ops::cpu
