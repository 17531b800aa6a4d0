#!/usr/bin/env bash
# Installs what tileops needs from Debian 12's apt (as root; sudo when not), then configures and
# builds the given CMake preset (default: release). Safe to re-run: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"

packages=(build-essential cmake g++ clang-format valgrind
          libgtest-dev libgmock-dev libbenchmark-dev libhwy-dev nlohmann-json3-dev libdlpack-dev
          libdnnl-dev libopenblas-dev libsentencepiece-dev sentencepiece libicu-dev
          libopenmpi-dev openmpi-bin
          python3-numpy python3-torch libtorch-dev python3-pybind11 python3-pytest python3-hypothesis
          pybind11-dev python3-pip python3-setuptools python3-wheel python3-venv)
# The linter: clang-tidy 22 where apt offers it (bookworm-security), else 19 (see lint.sh).
if ! command -v clang-tidy-22 >/dev/null && ! command -v clang-tidy-19 >/dev/null; then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  # Read whole before matching: under pipefail, grep -q quitting early fails the pipeline (SIGPIPE).
  policy=$(apt-cache policy clang-tidy-22)
  if grep -qE "Candidate: [0-9]" <<<"$policy"; then
    packages+=(clang-tidy-22)
  else
    packages+=(clang-tidy-19)
  fi
fi
./scripts/apt_install.sh "${packages[@]}"

jobs="${TILEOPS_BUILD_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
