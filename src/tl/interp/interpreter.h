// The `interp` backend: executes a verified Function directly, one block at a time. It is the
// reference semantics of the language and needs no compiler; the compiled backends are tested
// against it.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "src/tl/interp/buffer.h"

namespace tileops::tl::interp {

class Interpreter {
 public:
  explicit Interpreter(Function function) : function_(std::move(function)) {}

  // Runs block `block` of `num_blocks`; `params` holds one Slot per function parameter (the
  // pointer or the scalar buffer). Safe to call concurrently for different blocks.
  void run_block(std::int64_t block, std::int64_t num_blocks, const std::vector<Slot>& params,
                 std::mutex* atomic_mutex) const;

  const Function& function() const { return function_; }

 private:
  Function function_;
};

}  // namespace tileops::tl::interp
