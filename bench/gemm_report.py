#!/usr/bin/python3
"""Runs bench/gemm_bench and torch 1.13's F.linear on the same shapes, both on 2 threads, and
writes bench/results/cpu-gemm.md: GFLOP/s of linear (out = x @ W.T) for prefill (2048^3) and
decode (M = 1, 16; N = K = 4096), float32 and bfloat16, per tileops implementation (and, for
decode, linear_packed over pack_linear_weight's form of the weights), as fractions
of the ceilings measured in the same run (float32 FMA peak, bfloat16 multiply-accumulate peak,
copy bandwidth) and as ratios to torch and to oneDNN (implementation 1).
Ratios compare numbers measured back to back (see measure()).
Usage: /usr/bin/python3 bench/gemm_report.py [--target T] [build_dir]
(T: TILEOPS_SIMD_TARGET for gemm_bench; the file is then cpu-gemm-T.md)."""
import datetime
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

from report_util import cpu_name, cpu_simd, time_it  # noqa: E402
from target_option import result_name, take_target  # noqa: E402

THREADS = 2
REPS = 3
HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = take_target(sys.argv)
# Below AVX-512 the library's bfloat16 paths widen to float32 (dpbf16_enabled() is off): the
# VDPBF16PS peak, which gemm_bench measures whatever the target, is no ceiling of theirs.
DPBF16_TARGET = TARGET in ("native", "avx512")
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "release")
DTYPES = {0: "float32", 1: "bfloat16"}
IMPLS = {0: "native", 1: "onednn"}
PACKED = "native, packed"  # linear_packed after pack_linear_weight (decode cases only)
CASES = [(2048, 2048, 2048), (1, 4096, 4096), (16, 4096, 4096)]


def run_bench(case_filter):
    """One gemm_bench run: the ceilings, then the cases matching case_filter (a regex)."""
    env = dict(os.environ, TILEOPS_NUM_THREADS=str(THREADS), OMP_NUM_THREADS=str(THREADS))
    out = subprocess.run([os.path.join(BUILD, "bench", "gemm_bench"), "--benchmark_format=json",
                          "--benchmark_min_time=0.3",
                          f"--benchmark_filter=fma_peak|bf16_peak|copy|read|{case_filter}"],
                         env=env, check=True, capture_output=True, text=True).stdout
    result = {}
    for b in json.loads(out)["benchmarks"]:
        if "error_occurred" in b:
            continue
        parts = b["name"].split("/")
        name = parts[0][3:]
        if name == "linear":
            dtype, impl, m, n, k = (int(p) for p in parts[1:6])
            key = (DTYPES[dtype], IMPLS[impl])
        elif name == "linear_packed":
            key = (DTYPES[int(parts[1])], PACKED)
        else:
            key = name
        result[key] = b.get("flops_per_second", b.get("bytes_per_second"))
    return result



def torch_gflops(dtype, m, n, k):
    tdt = torch.float32 if dtype == "float32" else torch.bfloat16
    # Decode shapes cycle through 128 MiB or more of weights, as gemm_bench does.
    size = n * k * (4 if dtype == "float32" else 2)
    copies = max(2, -(-(128 << 20) // size)) if m <= 16 else 1
    x, ws = torch.randn(m, k).to(tdt), [torch.randn(n, k).to(tdt) for _ in range(copies)]
    turn = [0]

    def run():
        turn[0] = (turn[0] + 1) % copies
        return F.linear(x, ws[turn[0]])
    # bfloat16 in torch 1.13 on AVX2 runs at ~1 GFLOP/s: one cold call is a long enough timing.
    slow = tdt == torch.bfloat16 and m > 16
    seconds = time_it(run, 0.05 if slow else 0.3, warm_up=not slow)
    return 2.0 * m * n * k / seconds / 1e9


def peak_of(r, dtype):
    """The ceiling a dtype's rows are measured against (issue #3's): the float32 FMA peak, or the
    bfloat16 dot-product peak: VDPBF16PS where the CPU has AVX512-BF16, else the widening
    multiply-add's. AMX tiles, where present, are reported beside it."""
    if dtype == "float32":
        return r["fma_peak"]
    return r["dpbf16_peak"] if DPBF16_TARGET and "dpbf16_peak" in r else r["bf16_peak"]


def measure():
    """Per case and repetition: ceilings, both implementations and torch back to back, so that
    every ratio compares numbers taken within a few seconds of each other. Returns, per case,
    the repetition with the median native GFLOP/s / ceiling."""
    torch.set_num_threads(THREADS)
    chosen = {}
    for m, n, k in CASES:
        for dtype in DTYPES.values():
            d = [i for i, name in DTYPES.items() if name == dtype][0]
            runs = []
            for _ in range(REPS):
                packed = f"|linear_packed/{d}/{m}/{n}/{k}/" if m <= 16 else ""
                r = run_bench(f"linear/{d}/./{m}/{n}/{k}/{packed}")
                r["torch"] = torch_gflops(dtype, m, n, k) * 1e9
                runs.append(r)
            runs.sort(key=lambda r: r[(dtype, "native")] / peak_of(r, dtype))
            chosen[(dtype, m, n, k)] = runs[len(runs) // 2]
    return chosen



def runs_peaks_note(runs):
    """The bfloat16 peaks of the bfloat16 2048³ repetition."""
    r = runs[("bfloat16",) + CASES[0]]
    names = [("dpbf16_peak", "VDPBF16PS"), ("bf16_peak", "widening multiply-add"),
             ("amx_bf16_peak", "AMX")]
    return ", ".join(f"{what} {r[key] / 1e9:.0f}" for key, what in names if key in r) + \
        " GFLOP/s in the bfloat16 2048³ repetition"


def main():
    load = os.getloadavg()[0]
    runs = measure()
    lines = [
        "# CPU GEMM (linear) vs. the machine's ceilings, torch and oneDNN",
        "",
        f"Machine: {cpu_name()}, {os.cpu_count()} logical CPUs ({cpu_simd()}), shared "
        f"with other jobs (load average {load:.1f} at the start); {THREADS} threads for tileops "
        f"(TILEOPS_NUM_THREADS), oneDNN (OMP_NUM_THREADS) and torch {torch.__version__} "
        f"(set_num_threads). SIMD target: {TARGET} (TILEOPS_SIMD_TARGET, tileops only). "
        f"Date: {datetime.date.today()}.",
        "Generated by `bench/gemm_report.py` from `bench/gemm_bench.cc`. Each row group is one "
        f"repetition (the median of {REPS} by native / ceiling) in which the ceilings, both "
        "implementations and torch ran back to back, so each ratio compares numbers taken "
        "seconds apart; on this shared machine absolute numbers swing by 2× between minutes.",
        "",
        "Ceilings (all threads), measured before each case:",
        "- float32 FMA peak: 12 independent FMA chains per thread",
        "- bfloat16 dot-product peak (CPUs with AVX512-BF16): 16 independent `VDPBF16PS` "
        "chains per thread (each adds 16 bfloat16 pair products to 16 float32 lanes; 12 chains "
        "do not cover its latency on Zen 5)",
        "- bfloat16 widening peak: Highway 1.0's `ReorderWidenMulAccumulate` (B widened by "
        "shifts every step, then FMAs) on the best target it dispatches to; the bfloat16 peak "
        "where the CPU has no dot-product instruction",
        "- bfloat16 AMX peak (CPUs with AMX only): four independent 16×16×32 `TDPBF16PS` tile "
        "products per thread on tiles that stay in registers; reported beside the bars",
        f"- {runs_peaks_note(runs)}",
        "- copy bandwidth: memcpy of 64 MiB over the pool, read + write bytes",
        "- read bandwidth: a sum of 128 MiB over the pool, the bytes read; what a decode kernel "
        "that only reads its weights could reach (on this VM it reads between 0.8× and 1.2× the "
        "copy's figure from minute to minute)",
        "",
        "Case `M×N×K` is `linear(x[M, K], W[N, K])`. Peak: the float32 FMA peak for float32, the "
        "bfloat16 dot-product peak (`VDPBF16PS`; the widening peak without it) for bfloat16, as "
        "issue #3 defines its bars. Decode rows (M ≤ 16) give the weight bytes streamed per "
        "second and their fraction of the copy bandwidth; every implementation and torch cycle "
        "through 128 MiB or more of weight copies there (a model's layers each bring their own; "
        "one 32 MiB bfloat16 matrix would stay in the LLC). torch's float32 linear goes to the "
        "BLAS of Debian's alternatives (OpenBLAS 0.3.21 here), its bfloat16 linear to oneDNN 2.6. "
        f"`{PACKED}` is `linear_packed` over `pack_linear_weight`'s form of the same weights "
        "(packed once, outside the timing): issue #3's explicit `pack_weight` option, 16 weight "
        "rows interleaved per K step so that each thread streams one sequential run.",
        "",
        "| case | dtype | impl | GFLOP/s | peak GFLOP/s | of peak | weight GB/s | copy GB/s | "
        "of copy | read GB/s | of read | vs torch | vs onednn |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    bars = []
    for m, n, k in CASES:
        for dtype in DTYPES.values():
            r = runs[(dtype, m, n, k)]
            peak = peak_of(r, dtype) / 1e9
            copy = r["copy"] / 1e9
            read = r["read"] / 1e9
            t = r["torch"] / 1e9
            vendor = r.get((dtype, "onednn"), 0.0) / 1e9
            size = 4 if dtype == "float32" else 2
            for impl in list(IMPLS.values()) + [PACKED, "torch"]:
                if impl == "torch":
                    g = t
                elif (dtype, impl) in r:
                    g = r[(dtype, impl)] / 1e9
                else:
                    continue
                gbs = g / (2.0 * m) * size
                decode = m <= 16
                w_cols = (f"{gbs:.2f} | {copy:.2f} | {gbs / copy:.2f} | {read:.2f} | "
                          f"{gbs / read:.2f}" if decode else "— | — | — | — | —")
                vs_t = f"{g / t:.2f}×" if impl != "torch" else "—"
                vs_v = f"{g / vendor:.2f}×" if vendor and impl in ("native", PACKED) else "—"
                lines.append(f"| {m}×{n}×{k} | {dtype} | {impl} | {g:.1f} | {peak:.1f} | "
                             f"{g / peak:.2f} | {w_cols} | {vs_t} | {vs_v} |")
            g = r[(dtype, "native")] / 1e9
            fma_peak = r["fma_peak"] / 1e9
            if m > 16:
                note = ("" if dtype == "float32" or "amx_bf16_peak" not in r else
                        f"of the AMX tiles' peak: {g / (r['amx_bf16_peak'] / 1e9):.2f}")
                bars.append((f"{dtype} 2048³ / peak", g / peak,
                             0.80 if dtype == "float32" else 0.85, note))
                # The torch bar is only reachable if torch stays below 1/1.5 of the peak.
                note = (f"torch reaches {t / peak:.2f} of the peak here, so 1.5× torch would be "
                        f"{1.5 * t / peak:.2f} of the peak") if dtype == "float32" else ""
                bars.append((f"{dtype} 2048³ / torch", g / t,
                             1.5 if dtype == "float32" else 0.95, note))
            else:
                # Every weight element costs M multiply-adds: the weights cannot stream faster
                # than size·N·K bytes per 2·M·N·K/peak seconds (float32 FMAs, or bfloat16 dot
                # products). bfloat16 on AMX (M > 1): one 16×16×32 tile product per 16×32
                # weights (1 KiB) whatever M, so amx_peak/16 bytes per second.
                amx = dtype == "bfloat16" and m > 1 and "amx_bf16_peak" in r
                if amx:
                    ceiling, what = r["amx_bf16_peak"] / 16.0 / 1e9 / copy, "the AMX peak"
                elif dtype == "bfloat16" and DPBF16_TARGET and "dpbf16_peak" in r:
                    ceiling = size * r["dpbf16_peak"] / 1e9 / (2.0 * m) / copy
                    what = "the VDPBF16PS peak"
                else:
                    ceiling, what = size * fma_peak / (2.0 * m) / copy, "the float32 FMA peak"
                # The better of the two layouts a caller can choose: its own [N, K] weight, or
                # pack_linear_weight's (the explicit pack_weight option); both given.
                gp = r.get((dtype, PACKED), 0.0) / 1e9
                best, other = (gp, g) if gp > g else (g, gp)
                layouts = ("pack_linear_weight's layout", "the caller's layout")
                if gp <= g:
                    layouts = layouts[::-1]
                bars.append((f"decode {dtype} M={m}: weight bytes / copy bandwidth",
                             best / (2.0 * m) * size / copy, 0.8,
                             f"{layouts[0]}; {best / (2.0 * m) * size / read:.2f} of the read "
                             f"bandwidth; {layouts[1]}: {other / (2.0 * m) * size / copy:.2f} of "
                             f"copy; compute ceiling at {what}: {ceiling:.2f} of copy"))
    lines += ["", "Bars of issue #3 (native implementation, from the rows above; decode with the "
              "better of the caller's and the packed layout, each named):", ""]
    for text, value, goal, note in bars:
        lines.append(f"- {text}: {value:.2f} (bar ≥ {goal}) — {'pass' if value >= goal else 'FAIL'}"
                     + (f" ({note})" if note else ""))
    out_path = os.path.join(HERE, "results", result_name("cpu-gemm", TARGET))
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
