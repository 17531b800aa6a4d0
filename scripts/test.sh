#!/usr/bin/env bash
# One command: set up, check formatting and clang-tidy, build, and run every test.
# TILEOPS_TEST_ASAN=1 additionally runs the suite under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# Each phase's seconds, printed at the end: CI must stay within its budget (README).
phases=()
phase() { phases+=("$1 $((SECONDS - mark)) s"); mark=$SECONDS; }
mark=$SECONDS
./scripts/setup.sh release
phase "setup+build"
./scripts/lint.sh
phase "lint"
# JUnit XML of CTest and of pytest (CTest's python/pytest_* shards write pytest-*.xml) is the
# evidence that docs/capabilities.md is generated from; CI fails when the committed matrix is stale.
junit="$PWD/build/release/junit"
rm -rf "$junit" && mkdir -p "$junit"
ctest --preset release -j "$(nproc)" --output-junit "$junit/ctest.xml"
/usr/bin/python3 scripts/capabilities.py --check --ctest "$junit/ctest.xml" \
  --pytest "$junit"/pytest-*.xml
phase "ctest"
# libFuzzer targets (fuzz/): 15 s each from their seed corpora, with a fixed seed.
FUZZ_SEED=1 ./scripts/fuzz.sh 15
phase "fuzz"
if [[ "${TILEOPS_TEST_ASAN:-0}" == 1 ]]; then
  ./scripts/setup.sh asan
  ctest --preset asan -j "$(nproc)"
fi
echo "test.sh: phases: $(IFS=,; echo "${phases[*]}")"
echo "test.sh: all tests passed in $((SECONDS - start)) s"
