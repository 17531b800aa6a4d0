// Subcommands of the `tileops` CLI.
#pragma once

namespace tileops::cli {

int run_demo(int argc, char** argv);
int run_env(int argc, char** argv);

}  // namespace tileops::cli
