#!/usr/bin/python3
"""Runs bench/tl_ops_bench (native and tl implementations of each operator, same process, 2
threads) a few times and prints the markdown table of bench/results/tl-ops.md: the throughput of
each implementation (median over repetitions) and the ratio tl / native (bar: >= 0.8). The
repetitions of all benchmarks run in a random interleaved order, so that a slow minute of this
shared machine falls on both implementations rather than on one side of a ratio.
Usage: /usr/bin/python3 bench/tl_ops_report.py [build_dir] [repetitions]"""
import json
import os
import platform
import statistics
import subprocess
import sys

THREADS = 2
BAR = 0.8
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "release")
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def run():
    env = dict(os.environ, TILEOPS_NUM_THREADS=str(THREADS))
    out = subprocess.run([os.path.join(BUILD, "bench", "tl_ops_bench"), "--benchmark_format=json",
                          "--benchmark_min_time=0.2", f"--benchmark_repetitions={REPS}",
                          "--benchmark_enable_random_interleaving=true"],
                         env=env, check=True, capture_output=True, text=True).stdout
    samples = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["name"].split("/")
        op, dtype, index = name[0][3:], int(name[1]), int(name[2])
        value = b.get("FLOPS", b.get("bytes_per_second"))
        samples.setdefault((op, dtype, index), []).append(value)
    return {k: statistics.median(v) for k, v in samples.items()}


def main():
    results = run()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"{cpu}, {THREADS} threads, load average {os.getloadavg()[0]:.1f}, "
          f"median of {REPS} repetitions\n")
    print("| operator | dtype | native | tl | tl / native | bar 0.8 |")
    print("|---|---|---|---|---|---|")
    for (op, dtype, index), native in sorted(results.items()):
        if index != 0:
            continue
        tl_index = 2 if op == "gemm" else 1
        tl = results.get((op, dtype, tl_index))
        if tl is None:
            continue
        unit, scale = ("GFLOP/s", 1e9) if op == "gemm" else ("GB/s", 1e9)
        ratio = tl / native
        print(f"| {op} | {'float32' if dtype == 0 else 'bfloat16'} | {native / scale:.2f} {unit} | "
              f"{tl / scale:.2f} {unit} | {ratio:.2f} | {'met' if ratio >= BAR else '**not met**'} |")


if __name__ == "__main__":
    main()
