"""rotary_embedding, reshape_and_cache, top_k_top_p_sampler and top_k_top_p_mask against torch 1.13
on 2 threads.

Usage: TILEOPS_NUM_THREADS=2 PYTHONPATH=python /usr/bin/python3 bench/kv_ops_bench.py [--target T]
Writes bench/results/cpu-kv-ops.md (cpu-kv-ops-<T>.md for a forced SIMD target). Peers, timed in the same run: torch's implementation of the
same operation (vLLM's forward_native rotary, index_copy_ into the cache, vLLM's torch top-k/top-p
sampler and its CPU apply_top_k_top_p) and a torch copy (`copy_`) of the bytes the operator must move, whose time is the
bandwidth floor.
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from target_option import result_name, take_target  # noqa: E402

TARGET = take_target(sys.argv)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from tileops import ops  # noqa: E402

from report_util import cpu_name, cpu_simd  # noqa: E402

H, HKV, D, MAX_POS = 32, 8, 128, 4096


def best_ms(fn, repeats=7, min_time=0.05):
    """Best time of one call in ms (each sample runs enough calls to last min_time)."""
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start >= min_time or calls >= 1 << 14:
            break
        calls *= 2
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e3


def torch_rotary(positions, query, key, cache):
    """vLLM RotaryEmbedding.forward_native (neox), in place."""
    cos, sin = cache.index_select(0, positions).chunk(2, dim=-1)
    for x in (query, key):
        y = x.view(x.shape[0], -1, D)
        cos_, sin_ = cos[:, None, :], sin[:, None, :]
        x1, x2 = y[..., : D // 2], y[..., D // 2 :]
        o1 = x1 * cos_ - x2 * sin_
        o2 = x2 * cos_ + x1 * sin_
        y.copy_(torch.cat([o1, o2], dim=-1))


def torch_sampler(logits, k, p):
    """vLLM's apply_top_k_top_p followed by a multinomial draw (one k and p for every row)."""
    logits_sort, logits_idx = logits.float().sort(dim=-1, descending=False)
    kth = logits_sort.gather(-1, (logits.shape[1] - k) * torch.ones_like(logits_idx[:, :1]))
    logits_sort.masked_fill_(logits_sort < kth, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    mask = probs_sort.cumsum(dim=-1) <= 1 - p
    mask[:, -1] = False
    logits_sort.masked_fill_(mask, -float("inf"))
    logits = torch.empty_like(logits_sort).scatter_(-1, logits_idx, logits_sort)
    return torch.multinomial(logits.softmax(-1), 1)


def torch_mask(logits, k, p):
    """vLLM's apply_top_k_top_p on the CPU, in place: top-k alone through topk (its
    apply_top_k_only), otherwise a full sort, the k-th value, the ascending cumulative softmax."""
    if p is None:
        kth = logits.topk(int(k.max()), dim=1).values.gather(1, (k - 1).long().unsqueeze(1))
        return logits.masked_fill_(logits < kth, -float("inf"))
    s, idx = logits.sort(dim=-1, descending=False)
    if k is not None:
        kth = s.gather(1, (s.shape[1] - k.long()).unsqueeze(1))
        s.masked_fill_(s < kth, -float("inf"))
    mask = s.softmax(dim=-1).cumsum(dim=-1) <= 1 - p.unsqueeze(1)
    mask[:, -1] = False
    s.masked_fill_(mask, -float("inf"))
    return logits.scatter_(-1, idx, s)


def rotary_rows(dtype):
    rows = []
    cache = torch.rand(MAX_POS, D).to(dtype)
    for tokens in (16, 2048):
        positions = torch.randint(0, MAX_POS, (tokens,))
        q, k = torch.rand(tokens, H * D).to(dtype), torch.rand(tokens, HKV * D).to(dtype)
        q2, k2 = q.clone(), k.clone()
        copy_q, copy_k = torch.empty_like(q), torch.empty_like(k)
        t_ops = best_ms(lambda: ops.rotary_embedding(positions, q, k, D, cache))
        t_torch = best_ms(lambda: torch_rotary(positions, q2, k2, cache))
        t_copy = best_ms(lambda: (copy_q.copy_(q), copy_k.copy_(k)))
        rows.append((f"rotary_embedding in place, q [{tokens}, 32x128], k 8 heads", dtype,
                     t_ops, t_torch, t_copy))
    return rows


def cache_rows(dtype):
    tokens, block = 2048, 16
    key, value = torch.rand(tokens, HKV, D).to(dtype), torch.rand(tokens, HKV, D).to(dtype)
    kc = torch.zeros(tokens // block, block, HKV, D, dtype=dtype)
    vc = torch.zeros_like(kc)
    slots = torch.randperm(tokens)
    kflat, vflat = kc.view(-1, HKV, D), vc.view(-1, HKV, D)
    t_ops = best_ms(lambda: ops.reshape_and_cache(key, value, kc, vc, slots))
    t_torch = best_ms(lambda: (kflat.index_copy_(0, slots, key), vflat.index_copy_(0, slots, value)))
    ck, cv = torch.empty_like(key), torch.empty_like(value)
    t_copy = best_ms(lambda: (ck.copy_(key), cv.copy_(value)))
    return [(f"reshape_and_cache [{tokens}, 8, 128] block 16", dtype, t_ops, t_torch, t_copy)]


def sampler_rows():
    rows = []
    for vocab in (32000, 128256):
        logits = torch.randn(8, vocab) * 3
        t_ops = best_ms(lambda: ops.top_k_top_p_sampler(logits, 50, 0.9, seed=1))
        t_torch = best_ms(lambda: torch_sampler(logits, 50, 0.9))
        out = torch.empty_like(logits)
        t_copy = best_ms(lambda: out.copy_(logits))
        rows.append((f"top_k_top_p_sampler [8, {vocab}] k=50 p=0.9", torch.float32, t_ops,
                     t_torch, t_copy))
    return rows


def mask_rows():
    """top_k_top_p_mask at B = 8, V = 128256 (Llama 3); each timed call first copies fresh logits
    in (both sides: the mask is in place), so the copy column is part of both times."""
    rows, vocab = 8, 128256
    k = torch.full((rows,), 50, dtype=torch.int64)
    p = torch.full((rows,), 0.9)
    out = []
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(rows, vocab) * 3).to(dtype)
        work, peer = torch.empty_like(logits), torch.empty_like(logits)
        for name, kk, pp in (("k=50 p=0.9", k, p), ("k=50", k, None), ("p=0.9", None, p)):
            t_ops = best_ms(lambda: (work.copy_(logits), ops.top_k_top_p_mask(work, kk, pp)))
            t_torch = best_ms(lambda: torch_mask(peer.copy_(logits), kk, pp))
            t_copy = best_ms(lambda: work.copy_(logits))
            out.append((f"top_k_top_p_mask [8, {vocab}] {name} (copy-in included)", dtype, t_ops,
                        t_torch, t_copy))
    return out


def main():
    torch.set_num_threads(2)
    rows = rotary_rows(torch.float32) + rotary_rows(torch.bfloat16)
    rows += cache_rows(torch.float32) + cache_rows(torch.bfloat16) + sampler_rows()
    rows += mask_rows()
    lines = [
        "# CPU KV-cache, rotary and sampling operators vs torch 1.13",
        "",
        f"- machine: {cpu_name()}, {os.cpu_count()} CPUs (shared with other builds: noisy), "
        f"tileops and torch on 2 threads, torch {torch.__version__}",
        f"- CPU SIMD: {cpu_simd()}; tileops SIMD target: {TARGET} (TILEOPS_SIMD_TARGET; torch "
        "runs its own dispatch)",
        "- best of 7 samples per cell, all cells of a row measured in the same run "
        "(`bench/kv_ops_bench.py`)",
        "- torch: vLLM's forward_native rotary (in place), `index_copy_` into the flat cache, "
        "vLLM's torch top-k/top-p + multinomial, vLLM's CPU apply_top_k_top_p (sort; top-k alone: "
        "topk); copy: torch `copy_` of the bytes the operator must read (rotary: q and k; cache: "
        "key and value; sampler and mask: the logits)",
        "",
        "| case | dtype | tileops (ms) | torch (ms) | torch / tileops | copy (ms) | copy / tileops |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, dtype, t_ops, t_torch, t_copy in rows:
        dt = str(dtype).replace("torch.", "")
        lines.append(f"| {name} | {dt} | {t_ops:.4f} | {t_torch:.4f} | {t_torch / t_ops:.2f} | "
                     f"{t_copy:.4f} | {t_copy / t_ops:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    path = os.path.join(os.path.dirname(__file__), "results", result_name("cpu-kv-ops", TARGET))
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
