#include "examples/llama/mpi_communicator.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

using Clock = std::chrono::steady_clock;

// MPI counts are int: a larger buffer is refused rather than truncated.
int mpi_count(std::int64_t n, const char* what) {
  if (n < 0 || n > 0x7fffffff) {
    throw Error(ErrorKind::kInvalidArgument, std::string("tensor parallel ") + what + ": " +
                                                 std::to_string(n) +
                                                 " elements exceed MPI's int count");
  }
  return static_cast<int>(n);
}

void check(int status, const char* call) {
  if (status != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw Error(ErrorKind::kInvalidArgument,
                std::string("MPI ") + call + " failed: " + std::string(text, length));
  }
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(double timeout_seconds) : Communicator(timeout_seconds) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override { MPI_Finalize(); }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  [[noreturn]] void abort(int status) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);  // MPI_Abort does not return; this is for the compiler
  }

 protected:
  void all_reduce_impl(std::span<float> data, double timeout_seconds) override {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), mpi_count(std::ssize(data), "all_reduce"),
                         MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request),
          "Iallreduce");
    wait(request, "all_reduce", timeout_seconds);
  }
  void all_gather_bytes_impl(const void* mine, void* out, std::span<const std::int64_t> counts,
                             const char* name, double timeout_seconds) override {
    std::vector<int> sizes, offsets;
    std::int64_t offset = 0;
    for (const std::int64_t c : counts) {
      sizes.push_back(mpi_count(c, "all_gather"));
      offsets.push_back(mpi_count(offset, "all_gather"));
      offset += c;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgatherv(mine, sizes[rank_], MPI_BYTE, out, sizes.data(), offsets.data(), MPI_BYTE,
                          MPI_COMM_WORLD, &request),
          "Iallgatherv");
    wait(request, name, timeout_seconds);
  }

 private:
  // Polls the request (MPI progresses a nonblocking collective inside MPI_Test) until it
  // completes or the deadline passes. Between polls the rank yields its core (ranks may share
  // cores) but does not sleep for the first 100 ms: a sleep outlasts a collective's round on one
  // machine (each of its rounds waits for both sides to poll), and a decode step runs dozens.
  void wait(MPI_Request& request, const char* collective, double timeout_seconds) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
    for (;;) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "Test");
      if (done != 0) return;
      const auto now = Clock::now();
      if (now > deadline) {
        std::fprintf(stderr,
                     "llama_generate: rank %d: %s timed out after %g s (a rank died or hangs)\n",
                     rank_, collective, timeout_seconds);
        abort(1);
      }
      if (now - start < std::chrono::milliseconds(100)) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }

  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(std::int64_t tp, double timeout_seconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) check(MPI_Init(nullptr, nullptr), "Init");
  // Errors come back as codes (and become exceptions) instead of MPI's default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto comm = std::make_unique<MpiCommunicator>(timeout_seconds);
  if (comm->size() != tp) {
    const bool first = comm->rank() == 0;
    const int world = comm->size();
    comm.reset();  // finalises MPI: every rank found the same mismatch and exits normally
    throw CollectiveError("--tp " + std::to_string(tp) + " must equal the MPI world size (" +
                              std::to_string(world) + " ranks: mpirun -np " + std::to_string(tp) +
                              " llama_generate --tp " + std::to_string(tp) + " ...)",
                          first);
  }
  return comm;
}

}  // namespace tileops::llama
