"""Per-call overhead of the Python bindings, this tree against another build of tileops, same run.

Usage: PYTHONPATH=python /usr/bin/python3 bench/python_overhead_ab.py BASELINE_PYTHON_DIR [LABEL]
BASELINE_PYTHON_DIR is another checkout's built `python/` folder (e.g. a worktree of the commit
before a bindings change). Each side runs in its own process (both packages are `tileops`);
rounds alternate between them and the best of each call is kept, as the machine is shared and
noise is one-sided. Writes bench/results/python-overhead-ab.md.
"""

import json
import os
import platform
import subprocess
import sys

from report_util import ab_best, cpu_name, cpu_simd

ROUNDS = 7
CALLS = 20000
REPEATS = 3

# Small tensors, outputs given: what is left is the binding's own cost.
MEASURE = r"""
import json, sys, timeit
import torch
sys.path.insert(0, sys.argv[1])
from tileops import ops
torch.set_num_threads(1)
a, b, o = torch.rand(16), torch.rand(16), torch.empty(16)
x, w, y = torch.rand(2, 16), torch.rand(16), torch.empty(2, 16)
z = torch.empty(2, 8)
norm = ops.RmsNorm(x, w, 1e-6, y)
calls = {
    "add(a, b, o)": lambda: ops.add(a, b, o),
    "rms_norm(x, w, 1e-6, y)": lambda: ops.rms_norm(x, w, 1e-6, y),
    "rms_norm(x, w) (out allocated)": lambda: ops.rms_norm(x, w),
    "RmsNorm(...)(x, w, y)": lambda: norm(x, w, y),
    "silu_and_mul(x, out=z)": lambda: ops.silu_and_mul(x, out=z),
}
result = {}
for name, call in calls.items():
    call()
    best = min(timeit.repeat(call, number=int(sys.argv[2]), repeat=int(sys.argv[3])))
    result[name] = best / int(sys.argv[2]) * 1e6
print(json.dumps(result))
"""


def run_side(python_dir):
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, python_dir, str(CALLS), str(REPEATS)],
        check=True, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": python_dir},
    )
    return json.loads(out.stdout)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    label, best = ab_best(sys.argv, run_side, ROUNDS)
    lines = [
        "# Python per-call overhead: this tree against a baseline build, same run",
        "",
        f"Baseline: {label}. Best of {ROUNDS} alternating rounds x {REPEATS} x {CALLS} calls per "
        "side, torch CPU tensors, one torch thread (`bench/python_overhead_ab.py`).",
        "",
        f"- machine: {cpu_name()} ({cpu_simd()}), {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; the SIMD target does not matter here (16 elements)",
        "",
        "| call | baseline (us) | this tree (us) | ratio |",
        "|---|---|---|---|",
    ]
    for name, base in best["baseline"].items():
        now = best["this tree"][name]
        lines.append(f"| `{name}` | {base:.2f} | {now:.2f} | {now / base:.3f} |")
    lines.append("")
    path = os.path.join(os.path.dirname(__file__), "results", "python-overhead-ab.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
