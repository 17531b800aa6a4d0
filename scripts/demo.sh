#!/usr/bin/env bash
# One command: set up, build, and run the main job (`tileops demo`) on the CPU backend.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh release
exec ./build/release/tileops demo "$@"
