#!/usr/bin/python3
"""Runs bench/tl_ops_bench's paired benchmarks (native and tl calls of each operator alternating,
each call timed, 2 threads) a few times and prints the markdown table of
bench/results/tl-ops.md: the throughput of each implementation and the ratio tl / native (bar:
>= 0.8), each the median over repetitions of a repetition's median call. Alternating calls put
both sides of a ratio in the same minutes of this shared machine, whose speed moves by 30%
between benchmarks run seconds apart.
Usage: /usr/bin/python3 bench/tl_ops_report.py [--target T] [build_dir] [repetitions]
(T: TILEOPS_SIMD_TARGET for tl_ops_bench, which also picks the tl code's -march)."""
import json
import os
import platform
import statistics
import subprocess
import sys

from target_option import take_target  # noqa: E402

THREADS = 2
BAR = 0.8
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = take_target(sys.argv)
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "release")
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def run():
    env = dict(os.environ, TILEOPS_NUM_THREADS=str(THREADS))
    out = subprocess.run([os.path.join(BUILD, "bench", "tl_ops_bench"), "--benchmark_format=json",
                          "--benchmark_filter=BM_paired_", "--benchmark_min_time=0.3",
                          f"--benchmark_repetitions={REPS}",
                          "--benchmark_enable_random_interleaving=true"],
                         env=env, check=True, capture_output=True, text=True).stdout
    samples = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["name"].split("/")
        op, dtype = name[0][len("BM_paired_"):], int(name[1])
        samples.setdefault((op, dtype), []).append((b["native"], b["tl"], b["ratio"]))
    return {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in samples.items()}


def main():
    results = run()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"{cpu}, SIMD target {TARGET}, {THREADS} threads, load average {os.getloadavg()[0]:.1f}, "
          f"median of {REPS} repetitions\n")
    print("| operator | dtype | native | tl | tl / native | bar 0.8 |")
    print("|---|---|---|---|---|---|")
    for (op, dtype), (native, tl, ratio) in sorted(results.items()):
        unit = "GFLOP/s" if op == "gemm" else "GB/s"
        print(f"| {op} | {'float32' if dtype == 0 else 'bfloat16'} | {native / 1e9:.2f} {unit} | "
              f"{tl / 1e9:.2f} {unit} | {ratio:.2f} | {'met' if ratio >= BAR else '**not met**'} |")


if __name__ == "__main__":
    main()
