#include "examples/llama/step_hooks.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tileops/core/error.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/ops/cast.h"

namespace tileops::llama {

StepHooks::StepHooks(const TensorParallelOptions& options, Communicator* comm)
    : options_(options), comm_(comm) {
  const bool writer = comm_ == nullptr || comm_->rank() == 0;
  if (writer && !options_.dump_logits.empty()) {
    dump_.open(options_.dump_logits, std::ios::binary | std::ios::trunc);
    if (!dump_) {
      throw Error(ErrorKind::kInvalidArgument,
                  "llama_generate: --dump-logits " + options_.dump_logits + ": cannot create");
    }
  }
  if (comm_ != nullptr) comm_->reset_stats();
}

LogitsCallback StepHooks::on_logits() {
  return [this](const Tensor& logits) {
    if (!dump_.is_open()) return;
    TensorStorage f32(logits.shape(), DataType::kFloat32);
    ops::cast(logits, f32);
    dump_.write(static_cast<const char*>(f32.data()), static_cast<std::streamsize>(f32.bytes()));
  };
}

TokenCallback StepHooks::on_tokens() {
  return [this](const std::vector<std::int64_t>& /*next*/) {
    if (step_ == 0 && comm_ != nullptr) prefill_ = comm_->stats();
    const int rank = comm_ != nullptr ? comm_->rank() : 0;
    if (rank == options_.exit_rank && step_ == options_.exit_step) {
      std::fprintf(stderr,
                   "llama_generate: rank %d: test hook --tp-test-exit-rank: exiting at "
                   "step %lld\n",
                   rank, static_cast<long long>(step_));
      std::fflush(stderr);
      std::_Exit(3);  // as a crash would: no MPI_Finalize, no collective
    }
    if (rank == options_.hang_rank && step_ == options_.exit_step) {
      std::fprintf(stderr,
                   "llama_generate: rank %d: test hook --tp-test-hang-rank: hanging at "
                   "step %lld\n",
                   rank, static_cast<long long>(step_));
      std::fflush(stderr);
      // Longer than any other rank waits in a collective: they time out and abort this one.
      std::this_thread::sleep_for(std::chrono::duration<double>(4 * options_.timeout_seconds));
    }
    ++step_;
    return true;
  };
}

void StepHooks::finish() {
  if (comm_ != nullptr) total_ = comm_->stats();
  if (dump_.is_open()) {
    dump_.close();
    if (!dump_) {
      throw Error(ErrorKind::kInvalidArgument,
                  "llama_generate: --dump-logits " + options_.dump_logits + ": write failed");
    }
  }
}

std::string StepHooks::report(double prefill_seconds, double decode_seconds,
                              std::int64_t decode_steps) const {
  if (comm_ == nullptr || comm_->size() < 2) return "";
  const double decode_comm = total_.seconds - prefill_.seconds;
  const std::int64_t steps = decode_steps > 0 ? decode_steps : 1;
  char text[400];
  std::snprintf(
      text, sizeof(text),
      "tensor parallel: %d ranks (rank 0's view); in collectives: prefill %.3f s "
      "(%.1f %%), decode %.3f ms per step (%.1f %%), %lld calls and %.1f KiB per "
      "decode step\n",
      comm_->size(), prefill_.seconds,
      prefill_seconds > 0 ? 100 * prefill_.seconds / prefill_seconds : 0.0,
      1e3 * decode_comm / static_cast<double>(steps),
      decode_seconds > 0 ? 100 * decode_comm / decode_seconds : 0.0,
      static_cast<long long>((total_.calls - prefill_.calls) / steps),
      static_cast<double>(total_.bytes - prefill_.bytes) / 1024.0 / static_cast<double>(steps));
  return text;
}

}  // namespace tileops::llama
