// What llama_generate watches at each step of a token-id run: the logits dump (--dump-logits),
// the time the communicator spent in collectives during prefill and during decode, and the test
// hooks that make a rank die or hang mid-run (--tp-test-exit-rank, --tp-test-hang-rank).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "examples/llama/communicator.h"
#include "examples/llama/generate.h"
#include "examples/llama/tp_options.h"

namespace tileops::llama {

class StepHooks {
 public:
  // `comm` may be null (one rank, no collectives); the dump is written by rank 0 only.
  StepHooks(const TensorParallelOptions& options, Communicator* comm);

  // For generate(): each step's logits appended to the dump as float32 [batch, vocab], in step
  // order (prefill first), native byte order.
  LogitsCallback on_logits();
  // For generate(): marks the end of prefill for the collective statistics and runs the exit
  // and hang hooks; never stops the generation.
  TokenCallback on_tokens();
  // Closes the dump (an error when a write failed) and takes the last statistics.
  void finish();

  // "tensor parallel: ..." with the collectives' share of prefill and of a decode step; empty
  // without a communicator of several ranks.
  std::string report(double prefill_seconds, double decode_seconds,
                     std::int64_t decode_steps) const;

 private:
  TensorParallelOptions options_;
  Communicator* comm_;
  std::ofstream dump_;
  std::int64_t step_ = 0;
  CollectiveStats prefill_, total_;
};

}  // namespace tileops::llama
