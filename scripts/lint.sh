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
# clang-tidy 22 (Debian 12's bookworm-security) checks our sources about 4x faster than 14, 19
# (bookworm) about 2.7x: the newest installed runs (scripts/setup.sh installs one). libstdc++ 12's
# std::stable_sort calls a function it marks deprecated, which clang 22 reports from inside the
# system header: that diagnostic is off (g++ still reports deprecated calls in our own code).
tidy=""
for candidate in clang-tidy-22 clang-tidy-19; do
  if command -v "$candidate" >/dev/null; then tidy="$candidate" && break; fi
done
if [[ -z "$tidy" ]]; then
  echo "lint: needs clang-tidy-22 or clang-tidy-19 (scripts/setup.sh installs one)"
  exit 1
fi
log=build/clang-tidy.log
status=0
printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -n 1 "$tidy" -p build/release --quiet \
    --extra-arg=-DHWY_COMPILE_ONLY_STATIC=1 --extra-arg=-Wno-deprecated-declarations \
    >"$log" 2>/dev/null || status=$?
if ((status != 0)) || grep -qE "(error|warning):" "$log"; then
  grep -E -A3 "(error|warning):" "$log" | head -60
  echo "lint: $tidy found problems (status $status; full log: $log)"
  exit 1
fi
echo "lint: $tidy clean (${#sources[@]} files)"
