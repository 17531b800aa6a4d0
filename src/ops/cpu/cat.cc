// cat on CPU: every input is a strided copy into its slice of out, planned once per geometry
// (see copy_plan.h: contiguous data moves as long memcpy runs) and cut into blocks of similar
// byte counts that run over the thread pool.
#include <algorithm>
#include <memory>

#include "src/ops/cpu/copy_plan.h"
#include "src/ops/cpu/register.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

// Bytes per block of work: large enough to amortise a block's start, small enough to balance.
constexpr std::int64_t kBlockBytes = 128 * 1024;

// Elements [begin, end) of the copy of input `input`.
struct Block {
  std::size_t input;
  std::int64_t begin;
  std::int64_t end;
};

class CatCpu final : public Operator {
 public:
  explicit CatCpu(const Problem& problem) : element_size_(size_of(problem.tensors.back().dtype)) {
    const TensorDesc& out = problem.tensors.back();
    const int axis = static_cast<int>(problem.attributes[0]);
    const std::int64_t block_elements =
        std::max<std::int64_t>(1, kBlockBytes / static_cast<std::int64_t>(element_size_));
    std::int64_t position = 0;  // of the input's slice along axis in out
    for (std::size_t input = 0; input + 1 < problem.tensors.size(); ++input) {
      const TensorDesc& src = problem.tensors[input];
      CopyPlan plan = plan_copy(src.shape, src.strides, out.strides);
      plan.dst_offset = position * out.strides[axis];
      position += src.shape[axis];
      for (std::int64_t b = 0; b < plan.numel; b += block_elements) {
        blocks_.push_back({input, b, std::min(plan.numel, b + block_elements)});
      }
      plans_.push_back(plan);
    }
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    void* out = tensors.back().data();
    ctx.threads().parallel_for(static_cast<std::int64_t>(blocks_.size()), [&](std::int64_t b) {
      const Block& block = blocks_[static_cast<std::size_t>(b)];
      copy_range(plans_[block.input], tensors[block.input].data(), out, block.begin, block.end,
                 element_size_);
    });
  }

 private:
  std::size_t element_size_;
  std::vector<CopyPlan> plans_;  // one per input
  std::vector<Block> blocks_;
};

}  // namespace

void register_cat(std::vector<Implementation>& out) {
  out.push_back({"cat", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<CatCpu>(p); }});
}

}  // namespace tileops::ops::cpu
