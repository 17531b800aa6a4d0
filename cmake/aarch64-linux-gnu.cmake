# Cross build for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu) and the
# arm64 multiarch libraries (libhwy-dev:arm64, libgtest-dev:arm64); programs the build runs
# (the operator generator) and the tests run under qemu-user. Used by scripts/test-arm.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# No -L /usr/aarch64-linux-gnu: its loader (libc6-arm64-cross) need not be the build of the
# multiarch libc6:arm64 that every arm64 library pulls in, and a loader and libc from two glibc
# builds corrupted pthread_create's stack cache (the first thread creation spun for ever). Without
# a prefix qemu runs /lib/ld-linux-aarch64.so.1, libc6:arm64's own.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# pkg-config answers from the arm64 multiarch .pc files only: the build machine's own (x86-64)
# libraries must never reach an arm64 link.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
