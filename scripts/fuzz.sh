#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz preset: clang 14, ASan + UBSan) and runs each for the given
# seconds (default 60) from its seed corpus in fuzz/corpus/<name>/. The corpus is copied to a
# temporary directory, so new inputs never dirty the tree. Exits non-zero on any finding (crash,
# sanitizer report, leak, timeout, out-of-memory) and prints where the input that caused it is.
# FUZZ_TARGETS="framework c_api" selects targets; FUZZ_KEEP=1 keeps the work directory;
# FUZZ_SEED=N fixes libFuzzer's random seed (CI's run then explores the same inputs each time, so
# an unrelated change never fails on a newly found input; longer unseeded runs look for new ones).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

packages=(cmake clang-14 libclang-rt-14-dev llvm-14 libhwy-dev nlohmann-json3-dev libdlpack-dev)
./scripts/apt_install.sh "${packages[@]}"

jobs="${TILEOPS_BUILD_JOBS:-$(nproc)}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"

targets=()
for src in fuzz/*_fuzz.cc; do
  name="$(basename "$src" _fuzz.cc)"
  [[ -x "build/fuzz/fuzz/${name}_fuzz" ]] && targets+=("$name")
done
read -r -a targets <<<"${FUZZ_TARGETS:-${targets[*]}}"

work="$(mktemp -d "${TMPDIR:-/tmp}/tileops-fuzz.XXXXXX")"
[[ "${FUZZ_KEEP:-0}" == 1 ]] || trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14 || true)}"
# One target per core at a time (each libFuzzer process is single-threaded); reports in order.
run_target() {
  local name="$1" corpus="$work/$1"
  mkdir -p "$corpus" "$work/findings"
  [[ -d "fuzz/corpus/$name" ]] && cp -r "fuzz/corpus/$name/." "$corpus/"
  local options=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1
                 -artifact_prefix="$work/findings/${name}-")
  [[ -f "fuzz/$name.dict" ]] && options+=(-dict="fuzz/$name.dict")
  [[ -n "${FUZZ_SEED:-}" ]] && options+=(-seed="$FUZZ_SEED")
  local status=0
  "build/fuzz/fuzz/${name}_fuzz" "${options[@]}" "$corpus" >"$work/$name.log" 2>&1 || status=$?
  echo "$status" >"$work/$name.status"
}
for name in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  echo "fuzz: $name for ${seconds} s"
  run_target "$name" &
done
wait
failed=()
for name in "${targets[@]}"; do
  if [[ "$(cat "$work/$name.status")" != 0 ]]; then
    failed+=("$name")
    tail -n 60 "$work/$name.log"
    for f in "$work/findings/${name}"-*; do
      [[ -e "$f" ]] || continue
      saved="build/fuzz/findings/$(basename "$f")"
      mkdir -p build/fuzz/findings && cp "$f" "$saved"
      echo "fuzz: $name: input saved as $saved (reproduce: build/fuzz/fuzz/${name}_fuzz $saved)"
      for seed in "fuzz/corpus/$name"/*; do
        if cmp -s "$f" "$seed"; then echo "fuzz: $name: it is the corpus input $seed"; fi
      done
    done
  else
    grep -E '^stat::number_of_executed_units' "$work/$name.log" | sed "s/^/fuzz: $name: /"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, no findings"
