// The collectives a tensor-parallel decoder needs (all-reduce, all-gather, agreeing on a failure)
// behind one interface: a single-rank no-op here, MPI in mpi_communicator.cc (only built when
// CMake finds MPI, so nothing but llama_generate links it). Every collective is timed, so a run
// can report the communication share of a step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tileops::llama {

// Time and traffic inside the collectives since the last reset (this rank's view).
struct CollectiveStats {
  double seconds = 0;
  std::int64_t calls = 0;
  std::int64_t bytes = 0;  // this rank's payload: all-reduce buffer, gathered result
};

// A failure every rank knows of (they agreed on it, or each found it the same way): printed
// once (`print_here` on rank 0), then every rank exits with status 1 without aborting.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(const std::string& message, bool print_here)
      : std::runtime_error(message), print_here_(print_here) {}
  bool print_here() const { return print_here_; }

 private:
  bool print_here_;
};

class Communicator {
 public:
  // `timeout_seconds`: the longest a collective waits for the other ranks (--tp-timeout).
  explicit Communicator(double timeout_seconds) : timeout_seconds_(timeout_seconds) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sums `data` element-wise over the ranks, in place; float32 whatever the model dtype, so the
  // partial sums of a row-parallel projection lose nothing more in the reduction.
  void all_reduce_sum(std::span<float> data);
  // Concatenates every rank's `mine` in rank order into `out`; rank r contributes counts[r]
  // bytes (uneven counts allowed; any element type, copied exactly). Throws kInvalidArgument
  // when the sizes disagree.
  void all_gather(std::span<const std::byte> mine, std::span<std::byte> out,
                  std::span<const std::int64_t> counts);
  // After a phase every rank ran on its own (loading): `error` is this rank's message, empty on
  // success. Returns normally when every rank succeeded; otherwise every rank throws the same
  // CollectiveError naming each failing rank and its message (one rank: the message alone).
  // Waits up to `timeout_seconds` for the slowest rank (loading a shard may take minutes).
  void agree(const std::string& error, const std::string& phase, double timeout_seconds);
  // Ends every rank at once with `status` (after a failure on one rank mid-run, so the others
  // do not wait for it in a collective). The single-rank form exits this process.
  [[noreturn]] virtual void abort(int status) = 0;

  const CollectiveStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 protected:
  // The collectives, each waiting at most `timeout_seconds`; `name` names it in a timeout.
  virtual void all_reduce_impl(std::span<float> data, double timeout_seconds) = 0;
  // Rank r's `counts[r]` bytes at the sum of the counts before it.
  virtual void all_gather_bytes_impl(const void* mine, void* out,
                                     std::span<const std::int64_t> counts, const char* name,
                                     double timeout_seconds) = 0;

 private:
  double timeout_seconds_;
  CollectiveStats stats_;
};

// One rank: the collectives copy (or do nothing), abort() exits.
std::unique_ptr<Communicator> single_rank_communicator();

// For llama_generate: the communicator of `--tp tp` with `timeout_seconds` per collective. tp 1:
// the single-rank one, and MPI is not initialised. tp > 1: MPI's world, which must have `tp`
// ranks (else a CollectiveError printed on rank 0); without MPI at build time an error saying so.
// Defined in tileops_llama_tp (communicator_factory.cc), not in tileops_llama.
std::unique_ptr<Communicator> make_communicator(std::int64_t tp, double timeout_seconds);

}  // namespace tileops::llama
