#!/usr/bin/python3
"""Tensor parallelism of the decoder on this machine: 1 rank x 2 threads against 2 ranks x 1
thread (`mpirun -np 2 llama_generate --tp 2`), and a projection to N nodes.

Runs the same synthetic bfloat16 model (~125M parameters by default) both ways, alternating, and
keeps each side's best run (noise on a shared machine only adds time). The Communicator times
every collective, so the 2-rank runs report the time inside all-reduce/all-gather per decode
step and their payload; the projection to N nodes takes those measured counts and bytes, this
machine's measured compute per step, and an assumed network (latency, bandwidth). Writes
bench/results/cpu-llama-tp.md.

Usage: /usr/bin/python3 bench/llama_tp_report.py [--preset 125m|tiny] [--rounds 3] [--out FILE]
"""
import argparse
import os
import re
import shutil
import subprocess
import time

from report_util import cpu_name, cpu_simd  # noqa: E402

PRESETS = {
    # GPT-2-small-like widths in Llama's shape: 12 layers, hidden 768, 12/4 heads of 64.
    "125m": dict(layers=12, hidden=768, heads=12, kv_heads=4, head_size=64, intermediate=2048,
                 vocab=32000, prompts=4, prompt_tokens=64, new_tokens=33),
    "tiny": dict(layers=2, hidden=128, heads=4, kv_heads=2, head_size=32, intermediate=256,
                 vocab=1000, prompts=2, prompt_tokens=9, new_tokens=6),
}
# Assumed networks for the projection (not measured here): one-way latency per collective step
# and per-link bandwidth.
NETWORKS = [("25 GbE, TCP", 30e-6, 2.5e9), ("InfiniBand HDR 200 Gb/s", 3e-6, 20e9)]


def run(command, env):
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    log = out.stdout + out.stderr
    result = {phase: float(re.search(phase + r":.*= ([0-9.]+) tokens/s", log)[1])
              for phase in ("prefill", "decode")}
    result["step_ms"] = float(re.search(r"\(([0-9.]+) ms per step of", log)[1])
    tp = re.search(r"in collectives: prefill ([0-9.]+) s \(([0-9.]+) %\), decode ([0-9.]+) ms "
                   r"per step \(([0-9.]+) %\), ([0-9]+) calls and ([0-9.]+) KiB per decode step",
                   log)
    if tp:
        result.update(prefill_comm_s=float(tp[1]), prefill_comm_pct=float(tp[2]),
                      comm_ms=float(tp[3]), comm_pct=float(tp[4]), calls=int(tp[5]),
                      kib=float(tp[6]))
    result["described"] = next(l for l in log.splitlines() if l.startswith("decoder:"))
    return result


def best(results):
    """Each measure's best run (fastest rates, least time)."""
    out = dict(results[0])
    for r in results[1:]:
        for key in ("prefill", "decode"):
            out[key] = max(out[key], r[key])
        for key in ("step_ms", "comm_ms"):
            if key in r:
                out[key] = min(out[key], r[key])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="125m")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--binary", default="build/release/examples/llama_generate")
    parser.add_argument("--out", default=os.path.join("bench", "results", "cpu-llama-tp.md"))
    args = parser.parse_args()
    mpirun = shutil.which("mpirun")
    if not os.path.exists(args.binary) or mpirun is None:
        raise SystemExit("needs the release build and mpirun (scripts/setup.sh installs Open MPI)")
    p = PRESETS[args.preset]
    model = ["--dtype", "bf16", "--top-k", "1"]
    for key in ("layers", "hidden", "heads", "kv_heads", "head_size", "intermediate", "vocab",
                "prompts", "prompt_tokens", "new_tokens"):
        model += ["--" + key.replace("_", "-"), str(p[key])]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    target = os.environ.get("TILEOPS_SIMD_TARGET") or "native"
    one_cmd = [args.binary, *model]
    two_cmd = [mpirun, "-np", "2", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca",
               "btl_vader_single_copy_mechanism", "none", "-x", "TILEOPS_NUM_THREADS=1",
               args.binary, *model, "--tp", "2"]
    ones, twos = [], []
    for _ in range(args.rounds):
        ones.append(run(one_cmd, dict(env, TILEOPS_NUM_THREADS="2")))
        twos.append(run(two_cmd, env))
    one, two = best(ones), best(twos)

    # Projection: per decode step, every rank computes 1/N of the projections (decode streams
    # the weights: memory-bound, so a node's share of the weights sets its time) and runs the
    # same collectives as here. The all-reduces (2 per layer) carry batch x hidden float32, the
    # all-gather batch x vocab bfloat16 (the model dtype) in all. A ring collective over N nodes sends 2(N-1)/N of
    # an all-reduce's bytes and (N-1)/N of the gathered bytes per node, in 2(N-1) resp. N-1
    # latency-bound steps.
    batch, layers = p["prompts"], p["layers"]
    reduce_bytes = batch * p["hidden"] * 4
    gather_bytes = batch * p["vocab"] * 2
    compute_ms = one["step_ms"]  # measured: 1 rank x 2 threads, the whole model on this machine
    lines = [
        "# Tensor parallelism of the decoder: 1 rank x 2 threads vs 2 ranks x 1 thread",
        "",
        f"Machine: {cpu_name()} ({cpu_simd()}), {os.cpu_count()} logical CPUs, shared with other "
        f"users' jobs while this ran; SIMD target: {target} (TILEOPS_SIMD_TARGET). Open MPI "
        f"over shared memory (`--mca btl self,vader`), ranks not bound. Date: "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"Model: {one['described'][len('decoder:'):].strip()}; synthetic weights (seed 0), "
        f"{p['prompts']} prompts of {p['prompt_tokens']} tokens, {p['new_tokens']} new tokens "
        f"each, greedy. Best of {args.rounds} alternating runs per side. Generated by "
        "`bench/llama_tp_report.py`.",
        "",
        "| | 1 rank x 2 threads | 2 ranks x 1 thread | 2 ranks / 1 rank |",
        "|---|---|---|---|",
        f"| prefill tokens/s | {one['prefill']:.1f} | {two['prefill']:.1f} | "
        f"{two['prefill'] / one['prefill']:.2f}x |",
        f"| decode tokens/s | {one['decode']:.1f} | {two['decode']:.1f} | "
        f"{two['decode'] / one['decode']:.2f}x |",
        f"| decode step, ms | {one['step_ms']:.2f} | {two['step_ms']:.2f} | |",
        "",
        f"Communication (measured in the Communicator, rank 0): a decode step runs "
        f"{two['calls']} collectives ({2 * layers} all-reduces of {reduce_bytes / 1024:.1f} KiB "
        f"float32 and one all-gather of the logits, {gather_bytes / 1024:.0f} KiB bfloat16 in "
        f"all), {two['kib']:.0f} KiB per step; {two['comm_ms']:.3f} ms of the "
        f"{two['step_ms']:.2f} ms step in the best run ({two['comm_pct']:.1f} % in the last "
        f"one), {1e3 * two['comm_ms'] / two['calls']:.1f} us per collective. Prefill: "
        f"{two['prefill_comm_s'] * 1e3:.1f} ms in collectives ({two['prefill_comm_pct']:.1f} %). "
        "Time in a collective includes waiting for the other rank to arrive (the two ranks "
        "share two cores with other jobs), so it bounds the transfer cost from above.",
        "",
        "## Projection to N nodes",
        "",
        f"Measured: the compute of a decode step of the whole model on this machine "
        f"({compute_ms:.2f} ms, 1 rank x 2 threads), the collectives per step and their bytes "
        f"(above). Assumed: each node computes 1/N of it (decode streams the weights; a node "
        f"with its own memory bandwidth streams its 1/N in 1/N of the time; the replicated "
        f"embedding lookup and norms are negligible), ring collectives, and the networks' "
        f"latency and bandwidth below (not measured). Per step: compute/N + "
        f"{2 * layers} x (2(N-1) x latency + 2(N-1)/N x {reduce_bytes / 1024:.1f} KiB / "
        f"bandwidth) + (N-1) x latency + (N-1)/N x {gather_bytes / 1024:.0f} KiB / bandwidth.",
        "",
        "| network (assumed) | N | step, ms | of which communication | decode tokens/s |",
        "|---|---|---|---|---|",
    ]
    for name, latency, bandwidth in NETWORKS:
        for n in (1, 2, 4, 8):
            comm = 0.0
            if n > 1:
                comm = (2 * layers * (2 * (n - 1) * latency
                                      + 2 * (n - 1) / n * reduce_bytes / bandwidth)
                        + (n - 1) * latency + (n - 1) / n * gather_bytes / bandwidth)
            step = compute_ms / 1e3 / n + comm
            lines.append(f"| {name} | {n} | {step * 1e3:.2f} | {100 * comm / step:.0f} % | "
                         f"{batch / step:.0f} |")
    lines += [
        "",
        "Reading: the all-reduces are small (batch x hidden) and latency-bound: "
        f"{2 * layers} of them per decode step, 2(N-1) ring steps each, so the network's "
        "latency, not its bandwidth, sets the cost, and it grows with N while the compute "
        "shrinks as 1/N; the logits' all-gather is the one transfer where bandwidth counts. Once "
        "communication is about half of a step, more nodes stop paying. On this 2-CPU machine "
        "2 ranks x 1 thread compete for the same two cores and the same memory bandwidth as 1 "
        "rank x 2 threads, so the ratio above measures the overhead of splitting (collectives, "
        "per-rank fixed costs), not a speed-up.",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
