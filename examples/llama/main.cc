// llama_generate: the decoder demo on its own (`tileops demo` runs it after the operator table),
// on one process or, under mpirun with --tp N, tensor parallel over N ranks.
// Any error, whatever its type, is one line on stderr and exit status 1; a usage error is one
// line and status 2. With several ranks: a failure all ranks agreed on (loading, --tp against
// the world size) is printed by rank 0 and every rank exits 1; a failure of one rank mid-run is
// printed with its rank and aborts every rank (MPI_Abort), so none waits for it.
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "examples/llama/communicator.h"
#include "examples/llama/demo.h"
#include "examples/llama/tp_options.h"
#include "tileops/core/error.h"

namespace {

using tileops::llama::Communicator;

int fail(Communicator* comm, const char* what) {
  const std::string line = tileops::llama::one_line(what);
  if (comm == nullptr || comm->size() < 2) {
    std::fprintf(stderr, "llama_generate: %s\n", line.c_str());
    return 1;
  }
  std::fprintf(stderr, "llama_generate: rank %d: %s\n", comm->rank(), line.c_str());
  comm->abort(1);
  return 1;  // abort() does not return
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<Communicator> comm;
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::printf("usage: llama_generate [options]\noptions:\n%s%s",
                  tileops::llama::demo_options_help(),
                  tileops::llama::tensor_parallel_options_help());
      return 0;
    }
    tileops::llama::DemoOptions options;
    const std::vector<std::string> rest = tileops::llama::parse_demo_options(
        tileops::llama::parse_tensor_parallel_options(args, options.parallel), options);
    if (!rest.empty()) {
      std::fprintf(stderr, "llama_generate: unknown option '%s' (try --help)\n",
                   tileops::llama::one_line(rest[0]).c_str());
      return 2;
    }
    comm =
        tileops::llama::make_communicator(options.parallel.ranks, options.parallel.timeout_seconds);
    return tileops::llama::run_decoder_demo(options,
                                            options.parallel.ranks > 1 ? comm.get() : nullptr);
  } catch (const tileops::llama::CollectiveError& e) {
    if (e.print_here()) std::fprintf(stderr, "llama_generate: %s\n", e.what());
    return 1;  // every rank got here: MPI is finalised as `comm` goes
  } catch (const std::bad_alloc&) {
    return fail(comm.get(), "out of memory");
  } catch (const std::exception& e) {  // tileops::Error, std::filesystem_error, ...
    return fail(comm.get(), e.what());
  } catch (...) {
    return fail(comm.get(), "unknown error");
  }
}
