#!/usr/bin/env bash
# CTest packaging/consumer: installs the build into a fresh prefix, then builds and runs
# tests/consumer/ against it through the CMake package (C++ and C) and through pkg-config (C).
# Usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
env -u CMAKE_CXX_COMPILER_LAUNCHER -u CMAKE_C_COMPILER_LAUNCHER \
  cmake -S "$source/tests/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
"$work/build/consumer_cpp"
"$work/build/consumer_c"
pc_dir=$(dirname "$(find "$work/prefix" -name tileops.pc)")
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
cc -std=c11 "$source/tests/consumer/consumer.c" -o "$work/consumer_pkg_config" \
  $(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs tileops)
"$work/consumer_pkg_config"
[[ "$(PKG_CONFIG_PATH="$pc_dir" pkg-config --modversion tileops)" == "$("$work/build/consumer_c" | sed -n 's/.*tileops \([0-9.]*\),.*/\1/p')" ]]
echo "consumer: the installed tileops builds and runs from CMake (C++, C) and pkg-config (C)"
