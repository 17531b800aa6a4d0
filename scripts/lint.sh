#!/usr/bin/env bash
# Checks our own sources with clang-format (no diff allowed) and clang-tidy (.clang-tidy, warnings
# are errors). Needs build/release/compile_commands.json (scripts/setup.sh makes it). Highway
# kernels are linted for the static target only: the other targets are the same source.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.c' | grep -E '^(include|src|tests|tools|bench|python|examples)/')
clang-format --dry-run --Werror "${files[@]}"
echo "lint: clang-format clean (${#files[@]} files)"

# The Highway kernels (src/ops/cpu/simd) take longest: first, so no core ends the run alone on one.
mapfile -t sources < <(printf '%s\n' "${files[@]}" | grep -E '^(src|tools|python/src|examples)/.*\.cc$' |
  awk '{print (index($0, "src/ops/cpu/simd/") == 1 ? 0 : 1), $0}' | sort -s -k1,1n | cut -d' ' -f2-)
log=build/clang-tidy.log
status=0
printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p build/release --quiet \
    --extra-arg=-DHWY_COMPILE_ONLY_STATIC=1 >"$log" 2>/dev/null || status=$?
if ((status != 0)) || grep -qE "(error|warning):" "$log"; then
  grep -E -A3 "(error|warning):" "$log" | head -60
  echo "lint: clang-tidy found problems (status $status; full log: $log)"
  exit 1
fi
echo "lint: clang-tidy clean (${#sources[@]} files)"
