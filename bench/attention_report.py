#!/usr/bin/python3
"""Runs bench/attention_bench and torch 1.13 manual attention (softmax(q k^T * scale + mask) v)
on the same shapes, both on 2 threads, and writes bench/results/cpu-attention.md: causal prefill
(H = 8, S = 2048, D = 128) in useful GFLOP/s against the float32 FMA / bfloat16 peaks, and decode
(B = 8, H = 32, Hkv = 32 or 8, context 4096, D = 128, paged with block size 16) in KV bytes/s
against the copy bandwidth, each as ratios of numbers measured back to back in one repetition.
Usage: /usr/bin/python3 bench/attention_report.py [--target T] [build_dir]
(T: TILEOPS_SIMD_TARGET for attention_bench; the file is then cpu-attention-T.md)."""
import datetime
import json
import os
import subprocess
import sys

import torch

from report_util import cpu_name, cpu_simd, time_it  # noqa: E402
from target_option import result_name, take_target  # noqa: E402

THREADS = 2
REPS = int(os.environ.get("TILEOPS_BENCH_REPS", "3"))
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = take_target(sys.argv)
# Below AVX-512 the library's bfloat16 paths widen to float32 (dpbf16_enabled() is off): the
# VDPBF16PS peak, which attention_bench measures whatever the target, is no ceiling of theirs.
DPBF16_TARGET = TARGET in ("native", "avx512")
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "release")
DTYPES = {0: torch.float32, 1: torch.bfloat16}
PREFILL = (8, 2048, 128)
DECODE = [(8, 32, 32, 4096, 128), (8, 32, 8, 4096, 128)]


def run_bench(case_filter):
    env = dict(os.environ, TILEOPS_NUM_THREADS=str(THREADS))
    out = subprocess.run([os.path.join(BUILD, "bench", "attention_bench"),
                          "--benchmark_format=json", "--benchmark_min_time=0.3",
                          f"--benchmark_filter=fma_peak|bf16_peak|copy|read|{case_filter}"],
                         env=env, check=True, capture_output=True, text=True).stdout
    result = {}
    for b in json.loads(out)["benchmarks"]:
        if "error_occurred" in b:  # e.g. BM_amx_bf16_peak on a CPU without AMX
            continue
        name = b["name"].split("/")[0][3:]
        result[name] = b.get("flops_per_second", b.get("bytes_per_second",
                                                     b.get("kv_bytes_per_second")))
        if "copy_bytes_per_second" in b:  # decode: the copies alternated with its steps
            result["paired_copy"] = b["copy_bytes_per_second"]
    if "paired_copy" in result:
        result["copy"] = result.pop("paired_copy")
    return result



def torch_prefill(dtype, h, s, d):
    q, k, v = (torch.randn(h, s, d).to(dtype) for _ in range(3))
    mask = torch.full((s, s), float("-inf")).triu(1).to(dtype)

    def run():
        scores = q @ k.transpose(1, 2) * d ** -0.5 + mask
        return torch.softmax(scores, -1) @ v
    seconds = time_it(run, 0.3 if dtype == torch.float32 else 0.05)
    return 4.0 * s * s * d * h / 2 / seconds


def torch_decode(dtype, b, h, hkv, ctx, d):
    q = torch.randn(b, hkv, h // hkv, d).to(dtype)
    k, v = (torch.randn(b, hkv, ctx, d).to(dtype) for _ in range(2))

    def run():
        scores = q @ k.transpose(2, 3) * d ** -0.5
        return torch.softmax(scores, -1) @ v
    seconds = time_it(run, 0.3)
    return 2.0 * k.numel() * k.element_size() / seconds


def measure():
    torch.set_num_threads(THREADS)
    rows = {}
    for code, dtype in DTYPES.items():
        h, s, d = PREFILL
        runs = []
        for _ in range(REPS):
            r = run_bench(f"prefill/{code}/{h}/{s}/{d}/")
            r["torch"] = torch_prefill(dtype, h, s, d)
            runs.append(r)
        runs.sort(key=lambda r: r["prefill"] / peak_of(r, dtype == torch.float32))
        rows[("prefill", code, PREFILL)] = runs[len(runs) // 2]
        for case in DECODE:
            runs = []
            for _ in range(REPS):
                r = run_bench("decode/{}/{}/{}/{}/{}/{}/".format(code, *case))
                r["torch"] = torch_decode(dtype, *case)
                runs.append(r)
            runs.sort(key=lambda r: r["decode"] / r["copy"])
            rows[("decode", code, case)] = runs[len(runs) // 2]
    return rows



def peak_of(r, is_float32):
    """The float32 FMA peak, or issue #4's bfloat16 dot-product peak: VDPBF16PS where the CPU has
    AVX512-BF16 and the target is native or avx512, else the widening multiply-add's (AMX tiles,
    where present, beside it)."""
    if is_float32:
        return r["fma_peak"]
    return r["dpbf16_peak"] if DPBF16_TARGET and "dpbf16_peak" in r else r["bf16_peak"]


def main():
    load = os.getloadavg()[0]
    rows = measure()
    names = {0: "float32", 1: "bfloat16"}
    lines = [
        "# CPU attention vs. the machine's ceilings and torch manual attention",
        "",
        f"Machine: {cpu_name()}, {os.cpu_count()} logical CPUs ({cpu_simd()}), shared "
        f"with other jobs (load average {load:.1f} at the start); {THREADS} threads for tileops "
        f"(TILEOPS_NUM_THREADS) and torch {torch.__version__} (set_num_threads). "
        f"SIMD target: {TARGET} (TILEOPS_SIMD_TARGET, tileops only). "
        f"Date: {datetime.date.today()}.",
        "Generated by `bench/attention_report.py` from `bench/attention_bench.cc`. Each row is "
        f"one repetition (the median of {REPS} by tileops / ceiling) in which the ceilings, "
        "tileops and torch ran back to back; on this shared machine absolute numbers swing by 2x "
        "between minutes, the ratios less.",
        "",
        "Prefill: causal flash_attention, one sequence, useful FLOPs 4·S²·D·H/2. torch: "
        "`softmax(q @ k^T * scale + mask) @ v` on [H, S, D]. Peak: float32 FMA peak for float32, "
        "for bfloat16 the bfloat16 dot-product peak: 16 independent `VDPBF16PS` chains per "
        "thread where the CPU has AVX512-BF16 and the target is native or avx512, else Highway "
        "1.0's widening multiply-add (widen + FMA) at the target's width. Where the CPU has "
        "AMX, the fraction of its tile peak (four independent `TDPBF16PS` per thread) is given "
        "beside the bar.",
        "",
        "| case | dtype | tileops GFLOP/s | torch GFLOP/s | peak GFLOP/s | of peak | vs torch |",
        "|---|---|---|---|---|---|---|",
    ]
    bars = []
    for code in DTYPES:
        r = rows[("prefill", code, PREFILL)]
        peak = peak_of(r, code == 0)
        g, t = r["prefill"], r["torch"]
        lines.append(f"| H=8 S=2048 D=128 | {names[code]} | {g / 1e9:.1f} | {t / 1e9:.1f} | "
                     f"{peak / 1e9:.1f} | {g / peak:.2f} | {g / t:.1f}x |")
        note = ""
        if code == 1 and "amx_bf16_peak" in r:
            note = (f" (of the AMX tiles' peak, {r['amx_bf16_peak'] / 1e9:.0f} GFLOP/s: "
                    f"{g / r['amx_bf16_peak']:.2f})")
        bars.append((f"prefill {names[code]} / peak", g / peak, 0.5, note))
        if code == 0:
            bars.append(("prefill float32 / torch", g / t, 5.0, ""))
    lines += [
        "",
        "Decode: paged_attention, B = 8, context 4096, block size 16 (blocks shuffled), KV bytes "
        "= the K and V cache bytes read per step; each step alternates with a 64 MiB copy and "
        "the columns are the median rates of each, so that the bandwidth's drift cancels out of "
        "their ratio. torch: the same manual attention on contiguous [B, Hkv, ctx, D] caches (no "
        "paging), GQA by grouping the query heads. read: a sum of 128 MiB over the pool, measured "
        "just before the case (not alternated), the ceiling of a kernel that only reads.",
        "",
        "| case | dtype | tileops KV GB/s | torch KV GB/s | copy GB/s | of copy | torch of copy | "
        "read GB/s | of read |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for code in DTYPES:
        for case in DECODE:
            r = rows[("decode", code, case)]
            g, t, c = r["decode"], r["torch"], r["copy"]
            lines.append(f"| H={case[1]} Hkv={case[2]} | {names[code]} | {g / 1e9:.2f} | "
                         f"{t / 1e9:.2f} | {c / 1e9:.2f} | {g / c:.2f} | {t / c:.2f} | "
                         f"{r['read'] / 1e9:.2f} | {g / r['read']:.2f} |")
            bars.append((f"decode {names[code]} H={case[1]}/{case[2]} / copy", g / c, 0.75, ""))
    lines += ["", "Bars of issue #4 (from the rows above):", ""]
    for text, value, goal, note in bars:
        lines.append(f"- {text}: {value:.2f} (bar >= {goal}) — {'pass' if value >= goal else 'FAIL'}"
                     + note)
    out_path = os.path.join(HERE, "results", result_name("cpu-attention", TARGET))
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
