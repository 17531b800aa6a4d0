// The MPI Communicator (compiled only when CMake finds MPI; see communicator.h).
#pragma once

#include <cstdint>
#include <memory>

#include "examples/llama/communicator.h"

namespace tileops::llama {

// Initialises MPI, checks that MPI_COMM_WORLD has `tp` ranks (else finalises and throws a
// CollectiveError printed on rank 0) and returns the world's communicator. Each collective is
// nonblocking, polled until `timeout_seconds`; past it the rank prints
// "llama_generate: rank R: <collective> timed out after S s (a rank died or hangs)" and calls
// MPI_Abort, so that no rank waits forever for one that died. MPI is finalised on destruction.
std::unique_ptr<Communicator> make_mpi_communicator(std::int64_t tp, double timeout_seconds);

}  // namespace tileops::llama
