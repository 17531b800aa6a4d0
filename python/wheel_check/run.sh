#!/usr/bin/env bash
# CTest python/wheel: builds the tileops wheel offline (Debian's pip and setuptools, no build
# isolation, nothing compiled: the extension comes from the CMake build), installs it into a fresh
# `venv --system-site-packages` (numpy and torch from Debian) and runs operators from outside the
# source tree.
# Usage: run.sh PYTHON SOURCE_DIR WORK_DIR   (TILEOPS_EXTENSION_DIR: the build's extension folder)
set -euo pipefail
python=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
"$python" -m pip wheel --no-build-isolation --no-deps --no-index --quiet -w "$work/dist" \
  "$source/python"
wheel=$(echo "$work"/dist/tileops-*.whl)
# No pip inside the venv: the system's pip (a system site-package) installs into it.
"$python" -m venv --system-site-packages --without-pip "$work/venv"
"$work/venv/bin/python" -m pip install --no-deps --no-index --no-compile --quiet "$wheel"
cd "$work"
env -u PYTHONPATH -u TILEOPS_EXTENSION_DIR "$work/venv/bin/python" - "$work/venv" <<'PY'
import os, sys
import numpy as np
import tileops
from tileops import ops

venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(tileops.__file__).startswith(venv), tileops.__file__
x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(2, 16)
w = np.linspace(0.5, 1.5, 16, dtype=np.float32)
ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
assert np.abs(ops.rms_norm(x, w, 1e-6) - ref).max() < 1e-5
import torch
import tileops.torch_ops  # noqa: F401 (registers torch.ops.tileops)
out = torch.empty(2, 8)
torch.ops.tileops.silu_and_mul(out, torch.from_numpy(x))
t = torch.from_numpy(x)
assert torch.allclose(out, torch.nn.functional.silu(t[:, :8]) * t[:, 8:], atol=1e-6)
print(f"wheel: tileops {tileops.__version__} from {os.path.dirname(tileops.__file__)}")
PY
