"""gated_delta_rule (chunked prefill B1 H16 T4096 D128, recurrent decode) against torch computing
the same math, on 2 threads, in one run.

Usage: TILEOPS_NUM_THREADS=2 PYTHONPATH=python /usr/bin/python3 bench/gated_delta_rule_bench.py
Appends to bench/results/catalog-linear-attention.md. Peers: a torch chunked form (the WY
system per 64-token chunk, all heads batched: torch.linalg.solve_triangular and bmm, as the
torch fallbacks of Qwen3-Next do) for prefill, and the per-token torch recurrence (batched
einsum over sequences and heads) for decode; a torch copy of the state bytes is decode's
bandwidth floor.
"""

import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from tileops import ops  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from report_util import cpu_name, cpu_simd  # noqa: E402

C = 64


def best_ms(fn, repeats=5):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def torch_chunked(q, k, v, g, beta, scale):
    """The chunked gated delta rule in torch float32: q, k [T, H, D], v [T, H, D], g, beta [T, H]
    (one sequence, H = HV). Returns o [T, H, D] and the final state [H, D, D]."""
    t, h, d = q.shape
    q, k, v = (x.float().transpose(0, 1) for x in (q, k, v))  # [H, T, D]
    g, beta = g.float().t(), beta.float().t()
    q = q * scale
    s = torch.zeros(h, d, d)
    o = torch.empty(h, t, d)
    eye = torch.eye(C)
    for c0 in range(0, t, C):
        qc, kc, vc = q[:, c0:c0 + C], k[:, c0:c0 + C], v[:, c0:c0 + C]
        gc, bc = g[:, c0:c0 + C].cumsum(-1), beta[:, c0:c0 + C]
        n = qc.shape[1]
        decay = torch.exp(gc[:, :, None] - gc[:, None, :]).tril()
        a = (bc[:, :, None] * (kc @ kc.transpose(1, 2)) * decay).tril(-1)
        rhs = bc[:, :, None] * (vc - torch.exp(gc)[:, :, None] * (kc @ s))
        delta = torch.linalg.solve_triangular(a + eye[:n, :n], rhs, upper=False,
                                              unitriangular=True)
        o[:, c0:c0 + n] = torch.exp(gc)[:, :, None] * (qc @ s) + \
            ((qc @ kc.transpose(1, 2)) * decay) @ delta
        last = gc[:, -1:]
        s = s * torch.exp(last)[:, :, None] + \
            (kc * torch.exp(last - gc)[:, :, None]).transpose(1, 2) @ delta
    return o.transpose(0, 1), s


def torch_decode(q, k, v, g, beta, state, scale):
    """One token per sequence: q, k [N, H, D], v [N, HV, D], g, beta [N, HV]; state [N, HV, D, D]
    updated in place."""
    state.mul_(torch.exp(g.float())[:, :, None, None])
    kf = k.float()
    delta = beta.float()[:, :, None] * (v.float() - torch.einsum("nhkv,nhk->nhv", state, kf))
    state.add_(kf[:, :, :, None] * delta[:, :, None, :])
    return torch.einsum("nhkv,nhk->nhv", state, q.float() * scale)


def main():
    torch.set_num_threads(int(os.environ.get("TILEOPS_NUM_THREADS", "2")))
    gen = torch.Generator().manual_seed(0)
    rows = []
    # Prefill: B1 H16 T4096 D128, chunked.
    t, h, d = 4096, 16, 128
    q = torch.randn(1, t, h, d, generator=gen)
    k = torch.nn.functional.normalize(torch.randn(1, t, h, d, generator=gen), dim=-1)
    v = torch.randn(1, t, h, d, generator=gen)
    g = -0.5 * torch.rand(1, t, h, generator=gen)
    beta = torch.rand(1, t, h, generator=gen)
    scale = d ** -0.5
    o = torch.empty_like(v)
    state = torch.empty(1, h, d, d)
    ours = best_ms(lambda: ops.gated_delta_rule(q, k, v, g, beta, scale, chunk_size=64, o=o,
                                                final_state=state), repeats=3)
    ref_o, ref_s = torch_chunked(q[0], k[0], v[0], g[0], beta[0], scale)
    err = max((o[0] - ref_o).abs().max().item(), (state[0] - ref_s).abs().max().item())
    theirs = best_ms(lambda: torch_chunked(q[0], k[0], v[0], g[0], beta[0], scale), repeats=3)
    # Products per chunk and head: K S0, Q S0 (2·C·D²), K Kᵀ, Q Kᵀ (C²·D), the solve and P·delta
    # (C²·D/2 each), the state update (C·D²); two flops per multiply-add.
    flops = 2.0 * h * (t // C) * (3 * C * d * d + 2 * C * C * d)
    rows.append(("chunked prefill B1 H16 T4096 D128 float32", ours, theirs,
                 f"{flops / ours / 1e6:.1f} GFLOP/s", err))
    # Decode: 32 sequences x 1 token, 16 q/k heads over 32 value heads (Qwen3-Next-like), state in
    # place.
    n, hq, hv = 32, 16, 32
    q = torch.randn(n, 1, hq, d, generator=gen)
    k = torch.nn.functional.normalize(torch.randn(n, 1, hq, d, generator=gen), dim=-1)
    v = torch.randn(n, 1, hv, d, generator=gen)
    g = -0.5 * torch.rand(n, 1, hv, generator=gen)
    beta = torch.rand(n, 1, hv, generator=gen)
    s0 = torch.randn(n, hv, d, d) * 0.1
    mine, theirs_s = s0.clone(), s0.clone()
    o = torch.empty_like(v)
    ours = best_ms(lambda: ops.gated_delta_rule(q, k, v, g, beta, scale, mine, o=o,
                                                final_state=mine), repeats=7)
    qr, kr = q[:, 0].repeat_interleave(hv // hq, 1), k[:, 0].repeat_interleave(hv // hq, 1)
    theirs = best_ms(lambda: torch_decode(qr, kr, v[:, 0], g[:, 0], beta[:, 0], theirs_s, scale),
                     repeats=7)
    copy_dst = torch.empty_like(s0)
    floor = best_ms(lambda: copy_dst.copy_(s0), repeats=7)
    moved = 2.0 * s0.numel() * 4  # the state read and written once
    rows.append((f"recurrent decode N{n} x 1, {hq}/{hv} heads, D128", ours, theirs,
                 f"{moved / ours / 1e6:.1f} GB/s state traffic (copy of the state: "
                 f"{moved / floor / 1e6:.1f} GB/s)", float("nan")))

    load = os.getloadavg()
    lines = [f"\n## gated_delta_rule (operator), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "", f"Machine: {cpu_name()} ({cpu_simd()}), {torch.get_num_threads()} threads, load "
             f"average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch {torch.__version__}.", "",
             "| case | tileops ms | torch ms | ratio | throughput | max |diff| to torch |",
             "|---|---|---|---|---|---|"]
    for name, a, b, thr, e in rows:
        lines.append(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.2f}x | {thr} | "
                     f"{'-' if math.isnan(e) else f'{e:.1e}'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    path = os.path.join(os.path.dirname(__file__), "results", "catalog-linear-attention.md")
    new = not os.path.exists(path)
    with open(path, "a", encoding="utf-8") as f:
        if new:
            f.write("# Linear attention: gated_delta_rule and the catalog's linear_attention family\n"
                    "\nWritten by bench/gated_delta_rule_bench.py (ratios: torch ms / tileops ms, "
                    "timed in the same run).\n")
        f.write(text)


if __name__ == "__main__":
    main()
