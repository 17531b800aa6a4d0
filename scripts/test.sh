#!/usr/bin/env bash
# One command: set up, check formatting and clang-tidy, build, and run every test.
# TILEOPS_TEST_ASAN=1 additionally runs the suite under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
./scripts/setup.sh release
./scripts/lint.sh
ctest --preset release -j "$(nproc)"
# libFuzzer targets (fuzz/): 25 s each from their seed corpora, with a fixed seed.
FUZZ_SEED=1 ./scripts/fuzz.sh 25
if [[ "${TILEOPS_TEST_ASAN:-0}" == 1 ]]; then
  ./scripts/setup.sh asan
  ctest --preset asan -j "$(nproc)"
fi
echo "test.sh: all tests passed in $((SECONDS - start)) s"
