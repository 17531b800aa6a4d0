#!/usr/bin/env bash
# The opt-in Arm lane: cross-builds tileops for 64-bit Arm Linux (Debian's aarch64 cross compiler
# and arm64 multiarch libraries) and runs the C++ test suite under qemu-user. Highway dispatches
# to NEON (and SVE where qemu offers it); the x86-only paths (VDPBF16PS, AMX) are compiled out and
# their fallbacks run. Tile-language kernels are JIT-compiled by the cross compiler too.
# Extra arguments go to ctest (e.g. -R ops).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" dpkg --add-architecture arm64
  "${sudo_cmd[@]}" apt-get update -qq
fi
./scripts/apt_install.sh cmake g++-aarch64-linux-gnu qemu-user \
  libhwy-dev:arm64 libgtest-dev:arm64
cmake --preset aarch64 >/dev/null
cmake --build --preset aarch64 -j "$(nproc)"
# The JIT's compiler and target for generated kernels; qemu finds the arm64 libraries there.
export TILEOPS_CXX=aarch64-linux-gnu-g++ TILEOPS_TL_TARGET=armv8-a
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
ctest --preset aarch64 -j "$(nproc)" "$@"
echo "test-arm.sh: the Arm lane passed in $((SECONDS - start)) s"
