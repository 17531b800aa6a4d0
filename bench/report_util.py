"""What the bench/*.py reports share: the CPU's name and SIMD features, a timer for torch
peers, and the alternating rounds of the A/B reports."""
import json
import os
import platform
import subprocess
import sys
import time


def cpu_name():
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_simd():
    """The SIMD features that decide which kernels run, from /proc/cpuinfo's flags."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        extra = [name for flag, name in (("avx512_bf16", "BF16"), ("avx512_fp16", "FP16"),
                                         ("amx_bf16", "AMX-BF16")) if flag in flags]
        return "AVX-512" + (f" ({', '.join(extra)})" if extra else "") + " + AVX2 + FMA"
    if "avx2" in flags:
        return "AVX2 + FMA, no AVX-512"
    return "no AVX2"


def time_it(fn, min_time=0.3, warm_up=True):
    """Mean seconds per call of fn over at least min_time seconds (after one untimed call)."""
    if warm_up:
        fn()
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fn()
        reps += 1
    return (time.perf_counter() - start) / reps


def ab_best(argv, run_side, rounds):
    """The A/B reports' rounds: argv is [script, BASELINE_PYTHON_DIR, (LABEL)]. run_side(dir) runs
    one side in its own process and returns {case: time}; the sides alternate for `rounds` rounds
    and each case keeps its best (noise on a shared machine only adds time). Returns (label,
    {"baseline": {...}, "this tree": {...}})."""
    baseline = os.path.abspath(argv[1])
    label = argv[2] if len(argv) > 2 else baseline
    here = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "python"))
    best = {"baseline": {}, "this tree": {}}
    for _ in range(rounds):
        for side, path in (("baseline", baseline), ("this tree", here)):
            for name, value in run_side(path).items():
                best[side][name] = min(value, best[side].get(name, float("inf")))
    return label, best


def run_one_thread(measure, python_dir):
    """One side of a kernel A/B report: runs the script `measure` (argv[1] = python_dir) with
    that tree's tileops on one thread and returns the JSON its last line prints."""
    env = {**os.environ, "PYTHONPATH": python_dir, "TILEOPS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", measure, python_dir], check=True,
                         capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])
