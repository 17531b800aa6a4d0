// vLLM's cache block copies (csrc/cache_kernels.cu): swap_blocks between two caches and
// copy_blocks within one. A block is an entry of dim 0 (any strides, any dtype); block_mapping
// is an int32 or int64 [n, 2] tensor of (source block, destination block) rows, applied in row
// order (a later row reads what an earlier one wrote; the last write to a block wins). Every id
// is checked against its tensor's block count before anything is written: an id out of range is
// an error naming block_mapping, the row and the value.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// dst[block_mapping[i, 1]] = src[block_mapping[i, 0]]. src and dst: one dtype, the same block
// shape (all dims but the first; their block counts may differ), and no shared memory at all.
void swap_blocks(const Tensor& src, const Tensor& dst, const Tensor& block_mapping,
                 const Context& ctx = {});

// cache[block_mapping[i, 1]] = cache[block_mapping[i, 0]]. vLLM's copy_blocks(key_caches,
// value_caches, block_mapping) is this once per cache.
void copy_blocks(const Tensor& cache, const Tensor& block_mapping, const Context& ctx = {});

// Class forms: validated and specialised once for a geometry; each call checks the ids again.
class SwapBlocks {
 public:
  SwapBlocks(const Tensor& src, const Tensor& dst, const Tensor& block_mapping,
             int implementation_index = 0);
  void operator()(const Tensor& src, const Tensor& dst, const Tensor& block_mapping,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class CopyBlocks {
 public:
  CopyBlocks(const Tensor& cache, const Tensor& block_mapping, int implementation_index = 0);
  void operator()(const Tensor& cache, const Tensor& block_mapping, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
