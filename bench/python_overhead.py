"""Per-call overhead of tileops.ops.add vs torch.add on 16 float32 elements (out given).

Usage: PYTHONPATH=python /usr/bin/python3 bench/python_overhead.py
Writes bench/results/python-overhead.md (goal: tileops / torch <= 1.5).
"""

import os
import platform
import sys
import timeit

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import tileops  # noqa: E402
from tileops import ops  # noqa: E402

from report_util import cpu_name  # noqa: E402

CALLS = 20000
REPEATS = 3
ROUNDS = 5


def per_call_us(stmt):
    """Best of REPEATS runs of CALLS calls, in microseconds per call."""
    return min(timeit.repeat(stmt, number=CALLS, repeat=REPEATS)) / CALLS * 1e6



def main():
    torch.set_num_threads(1)
    a, b, o = torch.rand(16), torch.rand(16), torch.empty(16)
    tileops_add, torch_add = ops.add, torch.add
    tileops_add(a, b, o)
    torch_add(a, b, out=o)
    # Interleaved rounds, best of each: the machine is shared, so noise is one-sided.
    t_torch = t_ops = float("inf")
    for _ in range(ROUNDS):
        t_torch = min(t_torch, per_call_us(lambda: torch_add(a, b, out=o)))
        t_ops = min(t_ops, per_call_us(lambda: tileops_add(a, b, o)))
    ratio = t_ops / t_torch
    lines = [
        "# Python per-call overhead: `tileops.ops.add` vs `torch.add`",
        "",
        "16 float32 elements, torch CPU tensors, `out` given, one torch thread; best of "
        f"{ROUNDS} interleaved rounds x {REPEATS} x {CALLS} calls (`bench/python_overhead.py`).",
        "",
        f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"torch {torch.__version__}",
        "- torch tensors read in C++ by `tileops._torch_view`: "
        f"{'yes' if tileops._C._torch_fast_path() else 'no (five Python calls per tensor)'}",
        "",
        "| call | us per call |",
        "|---|---|",
        f"| `torch.add(a, b, out=o)` | {t_torch:.2f} |",
        f"| `tileops.ops.add(a, b, o)` | {t_ops:.2f} |",
        "",
        f"Ratio tileops / torch: **{ratio:.2f}x** (goal <= 1.5x).",
        "",
    ]
    path = os.path.join(os.path.dirname(__file__), "results", "python-overhead.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
