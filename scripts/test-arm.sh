#!/usr/bin/env bash
# The opt-in Arm lane: cross-builds tileops for 64-bit Arm Linux (Debian's aarch64 cross compiler
# and arm64 multiarch libraries) and runs the C++ test suite under qemu-user. Highway dispatches
# to NEON (the build leaves SVE out, see CMakeLists.txt); the x86-only paths (VDPBF16PS, AMX) are
# compiled out and their fallbacks run. Tile-language kernels are JIT-compiled by the cross
# compiler too. Not part of scripts/test.sh or CI. Extra arguments go to ctest (e.g. -R ops).
# README.md ("The Arm lane"): how long it takes, what runs, and the exclusions below.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" dpkg --add-architecture arm64
  "${sudo_cmd[@]}" apt-get update -qq
fi
./scripts/apt_install.sh cmake pkgconf g++-aarch64-linux-gnu qemu-user nlohmann-json3-dev \
  libhwy-dev:arm64 libgtest-dev:arm64

# Named exclusions: test cases whose dependency this lane cannot install, each with its reason.
# An exclusion applies only while its dependency is missing for arm64 (pkg-config below answers
# for arm64 only, as the toolchain file's does).
arm64_has() {
  PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig PKG_CONFIG_PATH= \
    pkg-config --exists "$@"
}
exclude=()
reasons=()
if ! arm64_has sentencepiece; then
  exclude+=("examples/llama_tokenizer_test|SentencePiece.*")
  reasons+=("examples/llama_tokenizer_test SentencePiece.*: tokenizer.model needs libsentencepiece,
    and Debian 12's libsentencepiece-dev is not Multi-Arch: same, so its arm64 package cannot be
    installed beside the amd64 one the x86 build uses")
fi
if ! arm64_has icu-uc icu-i18n; then
  exclude+=("examples/llama_tokenizer_test|BpeTokenizer.*")
  reasons+=("examples/llama_tokenizer_test BpeTokenizer.*: tokenizer.json needs ICU, and
    libicu-dev:arm64 is not installed; the lane does not install it because it pulls
    libc6-dev:arm64, which must be the very version of the build machine's libc6-dev and
    linux-libc-dev, so installing it may upgrade the host's own headers (and so invalidate every
    x86 build on it); install libicu-dev:arm64 yourself and these cases run")
fi
# The JIT here is a cross compiler on the build machine: `-march=native` names the build
# machine's (x86-64) CPU to it, and the clang on the build machine emits x86-64 code.
exclude+=("tl/tl_cpu_cache_test|TlCpuCache.TargetVariableAppliesWhenTheOptionIsEmpty")
reasons+=("tl/tl_cpu_cache_test TlCpuCache.TargetVariableAppliesWhenTheOptionIsEmpty: it compiles
    for target 'native', which aarch64-linux-gnu-g++ refuses on an x86-64 build machine")
exclude+=("tl/tl_cpu_fast_math_test|TlCpuFastMath.KernelsCompileWithClangToo")
reasons+=("tl/tl_cpu_fast_math_test TlCpuFastMath.KernelsCompileWithClangToo: its child compiles
    with the build machine's clang++, which emits x86-64 code (the JIT passes clang no --target)")
joined=$(IFS=';'; echo "${exclude[*]}")
cmake --preset aarch64 "-DTILEOPS_TEST_EXCLUDE=$joined" >/dev/null
cmake --build --preset aarch64 -j "$(nproc)"
# The JIT's compiler and target for generated kernels. No QEMU_LD_PREFIX: qemu runs the multiarch
# loader, the one that matches libc6:arm64 (cmake/aarch64-linux-gnu.cmake says why).
export TILEOPS_CXX=aarch64-linux-gnu-g++ TILEOPS_TL_TARGET=armv8-a
unset QEMU_LD_PREFIX
echo "test-arm.sh: the SIMD targets under qemu:"
qemu-aarch64 build/aarch64/tileops env | grep -iE "simd|highway|target" || true
for reason in "${reasons[@]}"; do echo "test-arm.sh: excluded $reason"; done
ctest --preset aarch64 -j "$(nproc)" "$@"
echo "test-arm.sh: the Arm lane passed in $((SECONDS - start)) s (${#exclude[@]} exclusions)"
