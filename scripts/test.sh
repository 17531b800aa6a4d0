#!/usr/bin/env bash
# One command: set up, check formatting and clang-tidy, build, and run every test.
# TILEOPS_TEST_ASAN=1 additionally runs the suite under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
./scripts/setup.sh release
./scripts/lint.sh
# JUnit XML of CTest and of pytest (run by CTest's python/pytest) is the evidence that
# docs/capabilities.md is generated from; CI fails when the committed matrix is stale.
junit="$PWD/build/release/junit"
rm -rf "$junit" && mkdir -p "$junit"
PYTEST_ADDOPTS="--junitxml=$junit/pytest.xml" \
  ctest --preset release -j "$(nproc)" --output-junit "$junit/ctest.xml"
/usr/bin/python3 scripts/capabilities.py --check --ctest "$junit/ctest.xml" \
  --pytest "$junit/pytest.xml"
# libFuzzer targets (fuzz/): 25 s each from their seed corpora, with a fixed seed.
FUZZ_SEED=1 ./scripts/fuzz.sh 25
if [[ "${TILEOPS_TEST_ASAN:-0}" == 1 ]]; then
  ./scripts/setup.sh asan
  ctest --preset asan -j "$(nproc)"
fi
echo "test.sh: all tests passed in $((SECONDS - start)) s"
