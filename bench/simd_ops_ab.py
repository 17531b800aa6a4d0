"""The operators of src/ops/cpu/simd's row kernels, this tree against another build, same run.

Usage: /usr/bin/python3 bench/simd_ops_ab.py BASELINE_PYTHON_DIR [LABEL] [--target T]
Covers the kernels on the shared row vocabulary (simd/rows-inl.h): elementwise (add, mul, swiglu,
silu_and_mul), norms (rms_norm, add_rms_norm), softmaxes (scaled, causal) and cast, float32 and
bfloat16, rows of 4096 (whole vectors) and of 4095 (a tail per row), in cache and from memory.
As bench/kv_ops_ab.py: each side in its own process, one thread, alternating rounds, the fastest
single call of all rounds per case. Writes bench/results/cpu-simd-ops-ab.md
(cpu-simd-ops-ab-<T>.md for a forced SIMD target).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from report_util import ab_best, cpu_name, cpu_simd, run_one_thread  # noqa: E402
from target_option import result_name, take_target  # noqa: E402

TARGET = take_target(sys.argv)
ROUNDS = 5

MEASURE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from tileops import ops
torch.set_num_threads(1)

def fastest_us(call, n):
    call()
    best = float("inf")
    for _ in range(n):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1e6

torch.manual_seed(0)
result = {}
for dtype in (torch.float32, torch.bfloat16):
    name = str(dtype).replace("torch.", "")
    for rows, cols, calls in ((16, 4096, 300), (16, 4095, 300), (1024, 4096, 20)):
        shape = f"[{rows}, {cols}], {name}"
        x, y = torch.randn(rows, cols).to(dtype), torch.randn(rows, cols).to(dtype)
        o, r = torch.empty_like(x), torch.empty_like(x)
        w = torch.rand(cols).to(dtype)
        gate = torch.randn(rows, 2 * cols).to(dtype)
        cases = {
            "add": lambda: ops.add(x, y, o),
            "mul": lambda: ops.mul(x, y, o),
            "swiglu": lambda: ops.swiglu(x, y, o),
            "silu_and_mul": lambda: ops.silu_and_mul(gate, -1, o),
            "rms_norm": lambda: ops.rms_norm(x, w, 1e-6, o),
            "add_rms_norm": lambda: ops.add_rms_norm(x, y, w, 1e-6, o, r),
            "scaled_softmax": lambda: ops.scaled_softmax(x, 0.5, o),
            "causal_softmax": lambda: ops.causal_softmax(x.view(1, rows, cols), o.view(1, rows, cols)),
        }
        for op, call in cases.items():
            result[f"{op} {shape}"] = fastest_us(call, calls)
        other = torch.empty(rows, cols, dtype=torch.bfloat16 if dtype == torch.float32 else torch.float32)
        result[f"cast {shape} to {str(other.dtype).replace('torch.', '')}"] = fastest_us(
            lambda: ops.cast(x, other), calls)
print(json.dumps(result))
"""


def run_side(python_dir):
    return run_one_thread(MEASURE, python_dir)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    label, best = ab_best(sys.argv, run_side, ROUNDS)
    ratios = []
    rows = []
    for name, now in best["this tree"].items():
        base = best["baseline"].get(name)
        if base:
            ratios.append(now / base)
        cells = f"{base:.1f} | {now:.1f} | {now / base:.3f}" if base else f"- | {now:.1f} | -"
        rows.append(f"| {name} | {cells} |")
    ratios.sort()
    lines = [
        "# SIMD row kernels: this tree against a baseline build, same run",
        "",
        f"Baseline: {label}. Fastest single call of {ROUNDS} alternating rounds per side, one "
        "thread (`bench/simd_ops_ab.py`). Ratio = this tree / baseline (below 1: faster).",
        "",
        f"- machine: {cpu_name()} ({cpu_simd()}), {os.cpu_count()} CPUs",
        f"- tileops SIMD target: {TARGET} (TILEOPS_SIMD_TARGET)",
        f"- ratios: min {ratios[0]:.3f}, median {ratios[len(ratios) // 2]:.3f}, "
        f"max {ratios[-1]:.3f} over {len(ratios)} cases",
        "",
        "| case | baseline (us) | this tree (us) | ratio |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
    path = os.path.join(os.path.dirname(__file__), "results", result_name("cpu-simd-ops-ab", TARGET))
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
