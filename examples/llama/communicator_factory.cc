// make_communicator (communicator.h): the one place that knows whether MPI was found at build
// time (TILEOPS_HAVE_MPI, set by examples/CMakeLists.txt on tileops_llama_tp).
#include <string>

#include "examples/llama/communicator.h"
#include "tileops/core/error.h"
#if TILEOPS_HAVE_MPI
#include "examples/llama/mpi_communicator.h"
#endif

namespace tileops::llama {

std::unique_ptr<Communicator> make_communicator(std::int64_t tp, double timeout_seconds) {
  if (tp < 1) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama_generate", "--tp",
                         "a number of ranks >= 1", std::to_string(tp));
  }
  if (!(timeout_seconds > 0)) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama_generate", "--tp-timeout",
                         "seconds > 0", std::to_string(timeout_seconds));
  }
  if (tp == 1) return single_rank_communicator();
#if TILEOPS_HAVE_MPI
  return make_mpi_communicator(tp, timeout_seconds);
#else
  throw Error(ErrorKind::kInvalidArgument,
              "--tp " + std::to_string(tp) +
                  " needs MPI, which CMake did not find when this program was built (install "
                  "libopenmpi-dev and openmpi-bin, e.g. with scripts/setup.sh, and reconfigure)");
#endif
}

}  // namespace tileops::llama
