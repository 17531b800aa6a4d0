#include "tools/cli/commands.h"

namespace tileops::cli {

int run_demo(int, char**) { return 0; }
int run_env(int, char**) { return 0; }

}  // namespace tileops::cli
