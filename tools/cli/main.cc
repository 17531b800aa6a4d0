#include "tools/cli/commands.h"

int main(int argc, char** argv) { return tileops::cli::run("tileops", argc - 1, argv + 1); }
