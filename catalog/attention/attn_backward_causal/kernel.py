"""Causal (top-left, k <= q) attention backward from the forward's row statistics (qkmax,
qksum): gq, gk, gv in one launch whose block steps first take query tiles (gq, looping over the
key tiles up to the tile's last row) and then key tiles (gk, gv, looping over the query tiles
from the key tile's first key on). Tiles wholly in the masked future are never visited; only
the diagonal tiles are masked. Tails in S1 and S2; all math float32, the operands of the
gradient matmuls rounded to float16 as the contract says."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128
EPS = 1e-10  # part of the contract: p = exp(s - qkmax) / (qksum + 1e-10)


def _p_dqk(q, k, v, grad, delta, qkmax, qksum, row, col, s1, s2, scale, tile_m, tile_n):
    """p and dqk of one [tile_m, tile_n] block (traced inline): 0 where the key is in the
    query's future (k > q), past S1 or past S2 (a select, so an overflowing exp there is
    dropped, not multiplied)."""
    p = asc2.exp(asc2.matmul(q, k.T) * scale - qkmax) / (qksum + EPS)
    q_pos = (asc2.arange(tile_m) + row).reshape(tile_m, 1)
    k_pos = asc2.arange(tile_n) + col
    keep = asc2.logical_and(asc2.logical_and(k_pos <= q_pos, q_pos < s1), k_pos < s2)
    p = asc2.where(keep, p, 0.0)
    dqk = p * (asc2.matmul(grad, v.T) - delta) * scale
    return p, dqk


def _rows(q_gm, g_gm, o_gm, max_gm, sum_gm, b, row, tile_m, d):
    """A query tile's q, grad (float32), delta = rowsum(o * grad) and statistics as [M, 1]."""
    q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
    grad = asc2.load(g_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
    o = asc2.load(o_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
    grad = grad.to(asc2.float32)
    delta = (o.to(asc2.float32) * grad).sum(1, keep_dims=True)
    qkmax = asc2.load(max_gm, [1, tile_m], offsets=[b, row]).reshape(tile_m, 1)
    qksum = asc2.load(sum_gm, [1, tile_m], offsets=[b, row]).reshape(tile_m, 1)
    return q.to(asc2.float32), grad, delta, qkmax, qksum


def _half(t):
    return t.to(asc2.float16).to(asc2.float32)


@asc2.jit
def attn_backward_causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, g_ptr, max_ptr, sum_ptr, gq_ptr,
                                gk_ptr, gv_ptr, bh, s1, s2, scale, qs0, qs1, qs2, ks0, ks1,
                                ks2, vs0, vs1, vs2, os0, os1, os2, gs0, gs1, gs2, ms0, ms1,
                                ls0, ls1, rs0, rs1, rs2, ks0_, ks1_, ks2_, vs0_, vs1_, vs2_,
                                d: asc.ConstExpr[int], tile_m: asc.ConstExpr[int],
                                tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, s1, d], [os0, os1, os2])
    g_gm = asc2.tensor(g_ptr, [bh, s1, d], [gs0, gs1, gs2])
    max_gm = asc2.tensor(max_ptr, [bh, s1], [ms0, ms1])
    sum_gm = asc2.tensor(sum_ptr, [bh, s1], [ls0, ls1])
    gq_gm = asc2.tensor(gq_ptr, [bh, s1, d], [rs0, rs1, rs2])
    gk_gm = asc2.tensor(gk_ptr, [bh, s2, d], [ks0_, ks1_, ks2_])
    gv_gm = asc2.tensor(gv_ptr, [bh, s2, d], [vs0_, vs1_, vs2_])
    tiles_m = asc2.ceildiv(s1, tile_m)
    tiles_n = asc2.ceildiv(s2, tile_n)
    # gq = dqk.half() @ k per query tile: its rows see keys up to its last row, so the key
    # tiles past min(row + tile_m, S1, S2) are in every row's future and never loaded.
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        visible = asc2.minimum(asc2.minimum(row + tile_m, s1), s2)
        q, grad, delta, qkmax, qksum = _rows(q_gm, g_gm, o_gm, max_gm, sum_gm, b, row, tile_m, d)
        gq = asc2.zeros([tile_m, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(visible, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            k = k.to(asc2.float32)
            _, dqk = _p_dqk(q, k, v.to(asc2.float32), grad, delta, qkmax, qksum, row, col,
                            s1, s2, scale, tile_m, tile_n)
            gq = asc2.matmul_acc(gq, _half(dqk), k)
        asc2.store(gq.reshape(1, tile_m, d), gq_gm, offsets=[b, row, 0])
    # gk = dqk.half()^T @ q and gv = p.half()^T @ grad per key tile: its first key `col` is
    # seen from query `col` on, so the query tiles before col // tile_m are never loaded (keys
    # past S1, seen by no query, get zeros).
    for t in asc2.range(asc2.block_idx(), bh * tiles_n, asc2.block_num()):
        b = t // tiles_n
        col = t % tiles_n * tile_n
        k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        k, v = k.to(asc2.float32), v.to(asc2.float32)
        gk = asc2.zeros([tile_n, d], asc2.float32)
        gv = asc2.zeros([tile_n, d], asc2.float32)
        for i in asc2.range(col // tile_m, tiles_m):
            row = i * tile_m
            q, grad, delta, qkmax, qksum = _rows(q_gm, g_gm, o_gm, max_gm, sum_gm, b, row,
                                                 tile_m, d)
            p, dqk = _p_dqk(q, k, v, grad, delta, qkmax, qksum, row, col, s1, s2, scale,
                            tile_m, tile_n)
            gk = asc2.matmul_acc(gk, _half(dqk).T, q)
            gv = asc2.matmul_acc(gv, _half(p).T, grad)
        asc2.store(gk.reshape(1, tile_n, d), gk_gm, offsets=[b, col, 0])
        asc2.store(gv.reshape(1, tile_n, d), gv_gm, offsets=[b, col, 0])


def _check(q, k, v, o, grad, qkmax, qksum):
    """[BH, S1, D] q/o/grad and [BH, S2, D] k/v of one float dtype, [BH, S1] float32 stats."""
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, S1, D], got {list(q.shape)}")
    bh, s1, d = q.shape
    for name, t, rows in (("k", k, None), ("v", v, k.shape[1] if k.dim() == 3 else None),
                          ("o", o, s1), ("grad", grad, s1)):
        if t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d or \
                (rows is not None and t.shape[1] != rows):
            want = f"[{bh}, {rows if rows is not None else 'S2'}, {d}]"
            raise ValueError(f"{name}: expected {want}, got {list(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {t.dtype}")
    for name, t in (("qkmax", qkmax), ("qksum", qksum)):
        if list(t.shape) != [bh, s1] or t.dtype != torch.float32:
            raise ValueError(f"{name}: expected float32 [{bh}, {s1}], got {t.dtype} "
                             f"{list(t.shape)}")
    return bh, s1, k.shape[1], d


def _output(given, shape, name):
    if given is None:
        return torch.empty(shape, dtype=torch.float32)
    if list(given.shape) != list(shape) or given.dtype != torch.float32:
        raise ValueError(f"{name}: expected float32 {list(shape)}, got {given.dtype} "
                         f"{list(given.shape)}")
    return given


def attn_backward_causal(q, k, v, o, grad, qkmax, qksum, scale=None, gq=None, gk=None, gv=None,
                         core_num=0):
    """q, o, grad: [BH, S1, D], k, v: [BH, S2, D] (float16/bfloat16/float32, one dtype, any
    strides), qkmax, qksum: float32 [BH, S1] from the causal forward (k <= q, query 0 and key 0
    aligned); returns float32 (gq [BH, S1, D], gk [BH, S2, D], gv [BH, S2, D]) with p = 0 where
    k > q: gq = dqk.half() @ k, gk = dqk.half()^T @ q, gv = p.half()^T @ grad."""
    bh, s1, s2, d = _check(q, k, v, o, grad, qkmax, qksum)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    gq = _output(gq, (bh, s1, d), "gq")
    gk = _output(gk, (bh, s2, d), "gk")
    gv = _output(gv, (bh, s2, d), "gv")
    strides = (*q.stride(), *k.stride(), *v.stride(), *o.stride(), *grad.stride(),
               *qkmax.stride(), *qksum.stride(), *gq.stride(), *gk.stride(), *gv.stride())
    attn_backward_causal_kernel[core_num](q, k, v, o, grad, qkmax, qksum, gq, gk, gv, bh, s1,
                                          s2, scale, *strides, d, TILE_M, TILE_N)
    return gq, gk, gv


def _causal_scores(q, k, scale):
    qd, kd = q.double().numpy(), k.double().numpy()
    score = (qd @ kd.swapaxes(1, 2)) * scale
    future = np.arange(kd.shape[1])[None, :] > np.arange(qd.shape[1])[:, None]
    return score, future


def reference(q, k, v, o, grad, qkmax, qksum, scale=None):
    """float64 numpy of CATALOG.md's formulas with the causal mask: (gq, gk, gv), the .half() of
    the gradient matmuls' operands as numpy's float64 -> float16 (to nearest even)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score, future = _causal_scores(q, k, scale)
    qd, kd, vd, od, gd = (t.double().numpy() for t in (q, k, v, o, grad))
    p = np.exp(score - qkmax.double().numpy()[..., None]) / (qksum.double().numpy()[..., None]
                                                            + EPS)
    p = np.where(future, 0.0, p)
    dqk = p * (gd @ vd.swapaxes(1, 2) - (od * gd).sum(-1, keepdims=True)) * scale
    dqk_h, p_h = (x.astype(np.float16).astype(np.float64) for x in (dqk, p))
    return dqk_h @ kd, dqk_h.swapaxes(1, 2) @ qd, p_h.swapaxes(1, 2) @ gd


def forward_statistics(q, k, v, scale=None):
    """float64 (o, qkmax, qksum) of causal softmax attention: what the forward hands the
    backward (every query sees key 0, so every row has a finite max)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    score, future = _causal_scores(q, k, scale)
    score = np.where(future, -np.inf, score)
    m = score.max(-1, keepdims=True)
    e = np.exp(score - m)
    l = e.sum(-1, keepdims=True)
    return (e / l) @ v.double().numpy(), m[..., 0], l[..., 0]


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: the backward and torch autograd of the masked manual
    attention (float32, forward included in torch's time as autograd needs it)."""
    b, h, s1, s2, d = shape
    gen = torch.Generator().manual_seed(0)
    dt = getattr(torch, dtype)
    q, grad = (torch.randn((b * h, s1, d), generator=gen).to(dt) for _ in "qg")
    k, v = (torch.randn((b * h, s2, d), generator=gen).to(dt) for _ in "kv")
    o, qkmax, qksum = (torch.from_numpy(x) for x in forward_statistics(q, k, v))
    o, qkmax, qksum = o.to(dt), qkmax.float(), qksum.float()
    outs = (torch.empty((b * h, s1, d)), torch.empty((b * h, s2, d)), torch.empty((b * h, s2, d)))
    scale = 1.0 / math.sqrt(d)
    future = torch.arange(s2)[None, :] > torch.arange(s1)[:, None]

    def manual():
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        score = (torch.bmm(qf, kf.transpose(1, 2)) * scale).masked_fill(future, -math.inf)
        out = torch.softmax(score, -1) @ vf
        out.backward(grad.float())
        return qf.grad, kf.grad, vf.grad

    # The visible part of the score matrix (about half for S1 = S2), 7 matmuls over it.
    visible = float(np.minimum(np.arange(s1) + 1, s2).sum())
    return {"run": lambda: attn_backward_causal(q, k, v, o, grad, qkmax, qksum, None, *outs),
            "torch": manual, "flops": 14.0 * b * h * visible * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, grad = (torch.randn((2, 70, 32)).half() for _ in "qg")
    k, v = (torch.randn((2, 90, 32)).half() for _ in "kv")
    o, qkmax, qksum = (torch.from_numpy(x) for x in forward_statistics(q, k, v))
    args = (q, k, v, o.half(), grad, qkmax.float(), qksum.float())
    for g, w in zip(attn_backward_causal(*args), reference(*args)):
        np.testing.assert_allclose(g.numpy(), w, rtol=3e-3, atol=3e-3)
