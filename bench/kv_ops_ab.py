"""rotary_embedding, top_k_top_p_sampler and add, this tree against another build, same run.

Usage: /usr/bin/python3 bench/kv_ops_ab.py BASELINE_PYTHON_DIR [LABEL] [--target T]
For kernel changes whose gain or loss is smaller than the machine's noise between runs: each
side runs in its own process, one thread, rounds alternate between them, and each case keeps
the fastest single call of all rounds (noise on a shared machine only adds time). Writes
bench/results/cpu-kv-ops-ab.md (cpu-kv-ops-ab-<T>.md for a forced SIMD target).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from report_util import ab_best, cpu_name, cpu_simd, run_one_thread  # noqa: E402
from target_option import result_name, take_target  # noqa: E402

TARGET = take_target(sys.argv)
ROUNDS = 4

MEASURE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from tileops import ops
torch.set_num_threads(1)
H, HKV, D, MAX_POS = 32, 8, 128, 4096

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
    cache = torch.rand(MAX_POS, D).to(dtype)
    for tokens in (16, 512):
        pos = torch.randint(0, MAX_POS, (tokens,))
        q, k = torch.rand(tokens, H * D).to(dtype), torch.rand(tokens, HKV * D).to(dtype)
        result[f"rotary_embedding q [{tokens}, 32x128] k 8 heads, {name}"] = fastest_us(
            lambda: ops.rotary_embedding(pos, q, k, D, cache), 400)
    x, y, o = torch.rand(1 << 20).to(dtype), torch.rand(1 << 20).to(dtype), None
    o = torch.empty_like(x)
    result[f"add [2^20], {name}"] = fastest_us(lambda: ops.add(x, y, o), 200)
for dtype in (torch.int8, torch.int16, torch.uint8):
    x = torch.randint(0, 100, (1 << 20,)).to(dtype)
    o = torch.empty_like(x)
    try:
        result[f"add [2^20], {str(dtype).replace('torch.', '')}"] = fastest_us(
            lambda: ops.add(x, x, o), 200)
    except (TypeError, ValueError):
        pass  # a build before the integer loops
logits = torch.randn(8, 32000) * 3
result["top_k_top_p_sampler [8, 32000] k=50 p=0.9"] = fastest_us(
    lambda: ops.top_k_top_p_sampler(logits, 50, 0.9, seed=1), 400)
print(json.dumps(result))
"""


def run_side(python_dir):
    return run_one_thread(MEASURE, python_dir)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    label, best = ab_best(sys.argv, run_side, ROUNDS)
    lines = [
        "# KV-cache and elementwise kernels: this tree against a baseline build, same run",
        "",
        f"Baseline: {label}. Fastest single call of {ROUNDS} alternating rounds per side "
        "(400 calls per round, 200 for add), one thread (`bench/kv_ops_ab.py`).",
        "",
        f"- machine: {cpu_name()} ({cpu_simd()}), {os.cpu_count()} CPUs, shared with builds",
        f"- tileops SIMD target: {TARGET} (TILEOPS_SIMD_TARGET)",
        "",
        "| case | baseline (us) | this tree (us) | ratio |",
        "|---|---|---|---|",
    ]
    for name, now in best["this tree"].items():
        base = best["baseline"].get(name)
        cells = f"{base:.1f} | {now:.1f} | {now / base:.3f}" if base else f"- | {now:.1f} | -"
        lines.append(f"| {name} | {cells} |")
    lines.append("")
    path = os.path.join(os.path.dirname(__file__), "results", result_name("cpu-kv-ops-ab", TARGET))
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
