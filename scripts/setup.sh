#!/usr/bin/env bash
# Installs what tileops needs from Debian 12's apt (as root; sudo when not), then configures and
# builds the given CMake preset (default: release). Safe to re-run: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"

packages=(build-essential cmake g++ clang-format clang-tidy valgrind
          libgtest-dev libgmock-dev libbenchmark-dev libhwy-dev nlohmann-json3-dev libdlpack-dev
          libdnnl-dev libopenblas-dev
          python3-numpy python3-torch libtorch-dev python3-pybind11 python3-pytest python3-hypothesis
          pybind11-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

jobs="${TILEOPS_BUILD_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
