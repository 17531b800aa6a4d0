// llama_generate's own options (not `tileops demo`'s): tensor parallelism over MPI ranks and the
// logits dump its tests compare.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tileops::llama {

struct TensorParallelOptions {
  std::int64_t ranks = 1;       // --tp N: must equal the MPI world size (mpirun -np N)
  double timeout_seconds = 60;  // --tp-timeout S: the longest a collective may wait
  // --tp-load-timeout S: the longest the ranks wait for the slowest to load its shard.
  double load_timeout_seconds = 600;
  std::string dump_logits;  // --dump-logits FILE: rank 0 writes every step's logits
  // Test hooks (hidden from --help): the rank that fails while loading, the rank that
  // _Exit()s (as if it crashed) and the rank that hangs (sleeps) after sampling step `exit_step`.
  std::int64_t fail_load_rank = -1;  // --tp-test-fail-load R
  std::int64_t hang_load_rank = -1;  // --tp-test-hang-load R: sleeps past --tp-load-timeout
  std::int64_t exit_rank = -1;       // --tp-test-exit-rank R
  std::int64_t hang_rank = -1;       // --tp-test-hang-rank R
  std::int64_t exit_step = 2;        // --tp-test-exit-step K
};

// Consumes the options above from `args` and returns the others; throws kInvalidArgument for a
// bad value (--tp >= 1, the timeouts in (0, 86400]).
std::vector<std::string> parse_tensor_parallel_options(const std::vector<std::string>& args,
                                                       TensorParallelOptions& options);
// Help text for the options above (the hooks left out).
const char* tensor_parallel_options_help();

}  // namespace tileops::llama
