#!/usr/bin/python3
"""End-to-end decoder: tileops (examples/llama) against llama.cpp on the same model.

Runs `llama_generate --export DIR` (synthetic weights from a seed, one prompt, greedy), converts
DIR's checkpoint to GGUF with bench/gguf_writer.py (F16, BF16, Q8_0, Q4_0), and runs llama.cpp
through the npm package node-llama-cpp (bench/llamacpp_run.mjs: its prebuilt CPU backend, fed
the same token ids) and llama_generate alternately, on the same threads, for each pair of
comparable formats: F16 and BF16 against tileops bfloat16, Q8_0 against `--quantize int8`,
Q4_0 against `--quantize int4` (those two when `llama_generate --help` lists `--quantize`).
Writes bench/results/cpu-llamacpp.md: prefill and decode tokens/s (best of the rounds: noise on
a shared machine only adds time), their ratio, and how far the greedy tokens agree.

llama.cpp is optional: without node or the package, the report says so and exits 0. Install:
  npm install --prefix bench/.llamacpp --save-exact node-llama-cpp@3.21.1

Usage: /usr/bin/python3 bench/llamacpp_report.py [--preset 1b|tiny] [--threads 2] [--rounds 2]
[--formats F16,BF16,Q8_0,Q4_0] [--out FILE] [--target T]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from gguf_writer import write_llama_gguf
from report_util import cpu_name, cpu_simd
from target_option import TARGETS, result_name

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(HERE, ".llamacpp")
PACKAGE_VERSION = "3.21.1"
INSTALL = f"npm install --prefix bench/.llamacpp --save-exact node-llama-cpp@{PACKAGE_VERSION}"
PRESETS = {
    # TinyLlama-1.1B's shape (as bench/llama_report.py), batch 1 as llama.cpp users run it.
    "1b": dict(layers=22, hidden=2048, heads=32, kv_heads=4, head_size=64, intermediate=5632,
               vocab=32000, prompt_tokens=32, new_tokens=32),
    "tiny": dict(layers=2, hidden=256, heads=4, kv_heads=2, head_size=64, intermediate=512,
                 vocab=1000, prompt_tokens=9, new_tokens=6),
}
# llama.cpp format -> the tileops side it is compared with (None: bfloat16 weights)
PAIRS = {"F16": None, "BF16": None, "Q8_0": "int8", "Q4_0": "int4"}


def llamacpp_missing():
    """Why llama.cpp cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    manifest = os.path.join(PACKAGE_DIR, "node_modules", "node-llama-cpp", "package.json")
    if not os.path.exists(manifest):
        return f"node-llama-cpp is not installed in bench/.llamacpp (run: {INSTALL})"
    with open(manifest) as f:
        version = json.load(f).get("version")
    if version != PACKAGE_VERSION:
        return (f"bench/.llamacpp holds node-llama-cpp {version}, the report pins "
                f"{PACKAGE_VERSION} (run: {INSTALL})")
    return None


def quantize_choices(binary):
    """The --quantize values llama_generate lists in --help (empty: it has no --quantize)."""
    text = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True).stdout
    line = next((line for line in text.splitlines() if "--quantize" in line), "")
    return set(re.findall(r"\bint[48]\b", line.split("--quantize", 1)[-1]))


def run_tileops(command, env):
    """One llama_generate run: tokens/s of both phases and the first tokens of prompt 0."""
    log = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    rate = {phase: float(re.search(phase + r":.*= ([0-9.]+) tokens/s", log)[1])
            for phase in ("prefill", "decode")}
    first = re.search(r"first tokens generated for prompt 0:((?: -?[0-9]+)*)", log)[1]
    return rate, [int(t) for t in first.split()], log


def run_llamacpp(gguf, prompt, new_tokens, threads):
    out = subprocess.run(["node", os.path.join(HERE, "llamacpp_run.mjs"), "--model", gguf,
                          "--prompt", ",".join(map(str, prompt)), "--new-tokens",
                          str(new_tokens), "--threads", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    r["rate"] = {"prefill": r["prefill_tokens"] / r["prefill_seconds"],
                 "decode": r["decode_tokens"] / r["decode_seconds"]}
    return r


def agreeing_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def best(rates):
    return {phase: max(r[phase] for r in rates) for phase in ("prefill", "decode")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="1b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2,
                        help="alternating tileops / llama.cpp runs per format (best is kept)")
    parser.add_argument("--formats", default=",".join(PAIRS),
                        help="llama.cpp formats, comma-separated, from " + ",".join(PAIRS))
    parser.add_argument("--binary", default="build/release/examples/llama_generate")
    parser.add_argument("--out", default=None,
                        help="default bench/results/cpu-llamacpp.md (-T.md for --target T)")
    parser.add_argument("--target", choices=TARGETS, default=None,
                        help="TILEOPS_SIMD_TARGET for llama_generate (llama.cpp picks its own)")
    args = parser.parse_args()
    formats = args.formats.split(",")
    unknown = [f for f in formats if f not in PAIRS]
    if unknown or args.threads <= 0 or args.rounds <= 0:
        parser.error(f"--formats: from {','.join(PAIRS)} (got {unknown}); --threads and "
                     "--rounds > 0")
    missing = llamacpp_missing()
    if missing:
        print(f"llamacpp_report: skipped, llama.cpp is optional: {missing}")
        return 0
    if args.target is not None:
        os.environ["TILEOPS_SIMD_TARGET"] = args.target
    target = os.environ.get("TILEOPS_SIMD_TARGET") or "native"
    if args.out is None:
        args.out = os.path.join("bench", "results", result_name("cpu-llamacpp", target))
    if not os.path.exists(args.binary):
        raise SystemExit(f"{args.binary} not found: build the release preset first")
    quantize = quantize_choices(args.binary)
    p = PRESETS[args.preset]
    env = dict(os.environ, TILEOPS_NUM_THREADS=str(args.threads))
    load = os.getloadavg()[0]
    rows = []  # (llama.cpp format, tileops side, tileops rates, llama.cpp rates, agreement)
    with tempfile.TemporaryDirectory() as work:
        export = os.path.join(work, "export")
        command = [args.binary, "--dtype", "bf16", "--top-k", "1", "--prompts", "1"]
        for key in ("layers", "hidden", "heads", "kv_heads", "head_size", "intermediate", "vocab",
                    "prompt_tokens", "new_tokens"):
            command += ["--" + key.replace("_", "-"), str(p[key])]
        first_rate, _, log = run_tileops(command + ["--export", export], env)
        with open(os.path.join(export, "generation.json")) as f:
            ours = json.load(f)
        prompt, our_tokens = ours["prompts"][0], ours["tokens"][0]
        described = next(line for line in log.splitlines() if line.startswith("decoder:"))
        info = {}
        system_info, flash, llama_threads = "not run", None, None
        side_rates = {None: [first_rate]}  # bfloat16 runs are shared by F16 and BF16
        for fmt in formats:
            side = PAIRS[fmt]
            if side is not None and side not in quantize:
                rows.append((fmt, side, None, None, None))
                continue
            gguf = os.path.join(work, f"model-{fmt}.gguf")
            started = time.perf_counter()
            write_llama_gguf(export, gguf, fmt)
            info[fmt] = (os.path.getsize(gguf), time.perf_counter() - started)
            ours_cmd = command + (["--quantize", side] if side else [])
            theirs = []
            for _ in range(args.rounds):
                rate, first_tokens, _ = run_tileops(ours_cmd, env)
                side_rates.setdefault(side, []).append(rate)
                theirs.append(run_llamacpp(gguf, prompt, p["new_tokens"], args.threads))
            os.remove(gguf)
            reference = our_tokens if side is None else first_tokens
            got = theirs[0]["tokens"]
            agree = (agreeing_prefix(reference, got), min(len(reference), len(got)))
            rows.append((fmt, side, side_rates[side], [t["rate"] for t in theirs], agree))
            system_info = theirs[0]["system_info"]
            flash = theirs[0]["flash_attention"]
            llama_threads = theirs[0]["threads"]

    lines = [
        "# End-to-end decoder: tileops vs llama.cpp (same model, same run)",
        "",
        f"Machine: {cpu_name()} ({cpu_simd()}), {os.cpu_count()} logical CPUs, shared with "
        f"other jobs (load average {load:.1f} at the start); {args.threads} threads for both "
        f"(TILEOPS_NUM_THREADS; node-llama-cpp `threads`, which reported {llama_threads}). "
        f"tileops SIMD target: {target} (TILEOPS_SIMD_TARGET). llama.cpp: node-llama-cpp "
        f"{PACKAGE_VERSION}'s prebuilt CPU backend (the variant it picked for this CPU reports: "
        f"`{system_info.strip()}`), KV cache F16, flash attention {flash}. "
        f"Date: {time.strftime('%Y-%m-%d')}.",
        "",
        f"Model: {described[len('decoder:'):].strip()}; synthetic weights (seed 0) exported by "
        "`llama_generate --export`, converted to GGUF by `bench/gguf_writer.py` (norms F32, every "
        "matrix, embedding and lm_head included, in the format named). One prompt of "
        f"{p['prompt_tokens']} token ids, {p['new_tokens']} new tokens, greedy. Prefill: the "
        "prompt up to the first new token; decode: the other new tokens, one per step.",
        f"Generated by `bench/llamacpp_report.py`: per format, {args.rounds} rounds of "
        "llama_generate then llama.cpp (`bench/llamacpp_run.mjs`), the best rate of each side "
        "kept (the bfloat16 side's rounds are pooled over F16 and BF16, plus the exporting run).",
        "",
        "| llama.cpp | tileops | prefill tok/s llama.cpp | tileops | tileops / llama.cpp "
        "| decode tok/s llama.cpp | tileops | tileops / llama.cpp | greedy tokens agree |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for fmt, side, ours_rates, their_rates, agree in rows:
        name = side or "bfloat16"
        if ours_rates is None:
            lines.append(f"| {fmt} | {name} | not available: llama_generate has no "
                         f"`--quantize {side}` | | | | | | |")
            continue
        o, t = best(ours_rates), best(their_rates)
        lines.append(f"| {fmt} | {name} | {t['prefill']:.2f} | {o['prefill']:.2f} | "
                     f"{o['prefill'] / t['prefill']:.2f}× | {t['decode']:.2f} | "
                     f"{o['decode']:.2f} | {o['decode'] / t['decode']:.2f}× | "
                     f"{agree[0]} of {agree[1]} |")
    lines += [
        "",
        "Greedy tokens: the length of the prefix on which llama.cpp's tokens and tileops' agree, "
        f"out of all {p['new_tokens']} at 16 bits (out of the first 8, which llama_generate "
        "prints, for int8/int4). The two round differently (llama.cpp: F16 KV cache and its own "
        "activation conversions; tileops: bfloat16 activations), and the synthetic model's "
        "logits hold near-ties, so later tokens may part: bench/results/cpu-llama.md shows the "
        "same between tileops and torch. The quantised pairs also quantise differently (Q8_0 / "
        "Q4_0 blocks of 32 with fp16 scales against tileops' own layout).",
        f"Load average at the end: {os.getloadavg()[0]:.1f}. Both sides' rates are only "
        "comparable with each other from the same run, and on a loaded machine they favour "
        "tileops: llama.cpp's threads meet at a spinning barrier after every graph node, so a "
        "descheduled thread stalls the other, while tileops' pool hands out blocks and sleeps "
        "after a brief spin.",
        "GGUF sizes: " + ", ".join(f"{fmt} {size / 2**30:.2f} GiB (written in {sec:.0f} s)"
                                   for fmt, (size, sec) in info.items()) + ".",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
