"""Catalog sort_rows [4096, 4096] float32 against torch.sort, both on 2 threads, alternating in
one process (issue #39's bar: >= torch.sort's throughput on 2 threads).

Usage: TILEOPS_NUM_THREADS=2 PYTHONPATH=python /usr/bin/python3 bench/sort_rows_bench.py
Prints median / minimum of 5 after a warm-up for sort_rows (values + int32 indices), torch.sort
and torch.sort(stable=True), twice. torch is set to 2 threads explicitly: its default on a VM
whose OpenMP sees one CPU is 1, which `tileops catalog bench sort_rows` leaves as it is.
"""

import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from catalog.sort_scan.sort_rows.kernel import bench_case  # noqa: E402


def median_min_ms(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main():
    torch.set_num_threads(int(os.environ.get("TILEOPS_NUM_THREADS", "2")))
    case = bench_case((4096, 4096), "float32")
    x = torch.randn((4096, 4096), generator=torch.Generator().manual_seed(0))
    for run in (1, 2):
        ours = median_min_ms(case["run"])
        theirs = median_min_ms(case["torch"])
        stable = median_min_ms(lambda: torch.sort(x, dim=-1, stable=True))
        print(f"run {run}, torch threads {torch.get_num_threads()}: sort_rows "
              f"{ours[0]:.1f} / {ours[1]:.1f} ms; torch.sort {theirs[0]:.1f} / {theirs[1]:.1f} ms; "
              f"stable {stable[0]:.1f} / {stable[1]:.1f} ms; ratio (medians) "
              f"{theirs[0] / ours[0]:.2f}x")


if __name__ == "__main__":
    main()
