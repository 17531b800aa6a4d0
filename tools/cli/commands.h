// Subcommands of the `tileops` CLI.
#pragma once

namespace tileops::cli {

// Runs `program <command> [options]` given argv without the program name: help, demo or env
// (new, check and verify are Python's: tileops.cli).
// Returns the exit status (2 for a usage error); errors go to stderr as one line.
int run(const char* program, int argc, char** argv);

int run_demo(int argc, char** argv);
int run_env(int argc, char** argv);

}  // namespace tileops::cli
