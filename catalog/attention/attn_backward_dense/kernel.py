"""Dense attention backward from the forward's row statistics (qkmax, qksum), in three stages
that each stand alone: stage 1 (qk = q k^T, dp = grad v^T), stages 1+2 (the probabilities p and
the score gradient dqk) and the total (gq, gk, gv). Tails in S1 and S2; all math float32, the
operands of the gradient matmuls rounded to float16 as the contract says."""

import math

import numpy as np
import torch

from tileops import asc, asc2

TILE_M = 64
TILE_N = 128
EPS = 1e-10  # part of the contract: p = exp(s - qkmax) / (qksum + 1e-10)


def _p_dqk(q, k, v, grad, delta, qkmax, qksum, row, col, s1, s2, scale, tile_m, tile_n):
    """p and dqk of one [tile_m, tile_n] block (traced inline); rows past S1 and columns past
    S2 are 0 (their padded statistics would give p = 1e10 there)."""
    p = asc2.exp(asc2.matmul(q, k.T) * scale - qkmax) / (qksum + EPS)
    rows = (asc2.arange(tile_m) + row).reshape(tile_m, 1) < s1
    p = asc2.where(asc2.logical_and(rows, asc2.arange(tile_n) + col < s2), p, 0.0)
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
def attn_backward_stage1_kernel(q_ptr, k_ptr, v_ptr, g_ptr, qk_ptr, dp_ptr, bh, s1, s2,
                                qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2, gs0, gs1, gs2,
                                as0, as1, as2, bs0, bs1, bs2, d: asc.ConstExpr[int],
                                tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    g_gm = asc2.tensor(g_ptr, [bh, s1, d], [gs0, gs1, gs2])
    qk_gm = asc2.tensor(qk_ptr, [bh, s1, s2], [as0, as1, as2])
    dp_gm = asc2.tensor(dp_ptr, [bh, s1, s2], [bs0, bs1, bs2])
    tiles_m = asc2.ceildiv(s1, tile_m)
    tiles_n = asc2.ceildiv(s2, tile_n)
    per_head = tiles_m * tiles_n
    for t in asc2.range(asc2.block_idx(), bh * per_head, asc2.block_num()):
        b = t // per_head
        row = (t % per_head) // tiles_n * tile_m
        col = t % tiles_n * tile_n
        q = asc2.load(q_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        grad = asc2.load(g_gm, [1, tile_m, d], offsets=[b, row, 0]).reshape(tile_m, d)
        k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        qk = asc2.matmul(q.to(asc2.float32), k.to(asc2.float32).T)
        dp = asc2.matmul(grad.to(asc2.float32), v.to(asc2.float32).T)
        asc2.store(qk.reshape(1, tile_m, tile_n), qk_gm, offsets=[b, row, col])
        asc2.store(dp.reshape(1, tile_m, tile_n), dp_gm, offsets=[b, row, col])


@asc2.jit
def attn_backward_stage12_kernel(q_ptr, k_ptr, v_ptr, o_ptr, g_ptr, max_ptr, sum_ptr, p_ptr,
                                 dqk_ptr, bh, s1, s2, scale, qs0, qs1, qs2, ks0, ks1, ks2,
                                 vs0, vs1, vs2, os0, os1, os2, gs0, gs1, gs2, ms0, ms1,
                                 ls0, ls1, ps0, ps1, ps2, ds0, ds1, ds2, d: asc.ConstExpr[int],
                                 tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, s1, d], [os0, os1, os2])
    g_gm = asc2.tensor(g_ptr, [bh, s1, d], [gs0, gs1, gs2])
    max_gm = asc2.tensor(max_ptr, [bh, s1], [ms0, ms1])
    sum_gm = asc2.tensor(sum_ptr, [bh, s1], [ls0, ls1])
    p_gm = asc2.tensor(p_ptr, [bh, s1, s2], [ps0, ps1, ps2])
    dqk_gm = asc2.tensor(dqk_ptr, [bh, s1, s2], [ds0, ds1, ds2])
    tiles_m = asc2.ceildiv(s1, tile_m)
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        q, grad, delta, qkmax, qksum = _rows(q_gm, g_gm, o_gm, max_gm, sum_gm, b, row, tile_m, d)
        for j in asc2.range(asc2.ceildiv(s2, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            p, dqk = _p_dqk(q, k.to(asc2.float32), v.to(asc2.float32), grad, delta, qkmax,
                            qksum, row, col, s1, s2, scale, tile_m, tile_n)
            asc2.store(p.reshape(1, tile_m, tile_n), p_gm, offsets=[b, row, col])
            asc2.store(dqk.reshape(1, tile_m, tile_n), dqk_gm, offsets=[b, row, col])


@asc2.jit
def attn_backward_gq_kernel(q_ptr, k_ptr, v_ptr, o_ptr, g_ptr, max_ptr, sum_ptr, gq_ptr,
                            bh, s1, s2, scale, qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2,
                            os0, os1, os2, gs0, gs1, gs2, ms0, ms1, ls0, ls1, rs0, rs1, rs2,
                            d: asc.ConstExpr[int], tile_m: asc.ConstExpr[int],
                            tile_n: asc.ConstExpr[int]):
    """gq = dqk.half() @ k: one block step per query tile, looping over the key tiles."""
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, s1, d], [os0, os1, os2])
    g_gm = asc2.tensor(g_ptr, [bh, s1, d], [gs0, gs1, gs2])
    max_gm = asc2.tensor(max_ptr, [bh, s1], [ms0, ms1])
    sum_gm = asc2.tensor(sum_ptr, [bh, s1], [ls0, ls1])
    gq_gm = asc2.tensor(gq_ptr, [bh, s1, d], [rs0, rs1, rs2])
    tiles_m = asc2.ceildiv(s1, tile_m)
    for t in asc2.range(asc2.block_idx(), bh * tiles_m, asc2.block_num()):
        b = t // tiles_m
        row = t % tiles_m * tile_m
        q, grad, delta, qkmax, qksum = _rows(q_gm, g_gm, o_gm, max_gm, sum_gm, b, row, tile_m, d)
        gq = asc2.zeros([tile_m, d], asc2.float32)
        for j in asc2.range(asc2.ceildiv(s2, tile_n)):
            col = j * tile_n
            k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
            k = k.to(asc2.float32)
            _, dqk = _p_dqk(q, k, v.to(asc2.float32), grad, delta, qkmax, qksum, row, col,
                            s1, s2, scale, tile_m, tile_n)
            gq = asc2.matmul_acc(gq, _half(dqk), k)
        asc2.store(gq.reshape(1, tile_m, d), gq_gm, offsets=[b, row, 0])


@asc2.jit
def attn_backward_gkv_kernel(q_ptr, k_ptr, v_ptr, o_ptr, g_ptr, max_ptr, sum_ptr, gk_ptr,
                             gv_ptr, bh, s1, s2, scale, qs0, qs1, qs2, ks0, ks1, ks2,
                             vs0, vs1, vs2, os0, os1, os2, gs0, gs1, gs2, ms0, ms1, ls0, ls1,
                             ks0_, ks1_, ks2_, vs0_, vs1_, vs2_, d: asc.ConstExpr[int],
                             tile_m: asc.ConstExpr[int], tile_n: asc.ConstExpr[int]):
    """gk = dqk.half()^T @ q, gv = p.half()^T @ grad: one block step per key tile, looping over
    the query tiles (recomputing p and dqk rather than sharing them with the gq kernel through
    memory or atomics)."""
    q_gm = asc2.tensor(q_ptr, [bh, s1, d], [qs0, qs1, qs2])
    k_gm = asc2.tensor(k_ptr, [bh, s2, d], [ks0, ks1, ks2])
    v_gm = asc2.tensor(v_ptr, [bh, s2, d], [vs0, vs1, vs2])
    o_gm = asc2.tensor(o_ptr, [bh, s1, d], [os0, os1, os2])
    g_gm = asc2.tensor(g_ptr, [bh, s1, d], [gs0, gs1, gs2])
    max_gm = asc2.tensor(max_ptr, [bh, s1], [ms0, ms1])
    sum_gm = asc2.tensor(sum_ptr, [bh, s1], [ls0, ls1])
    gk_gm = asc2.tensor(gk_ptr, [bh, s2, d], [ks0_, ks1_, ks2_])
    gv_gm = asc2.tensor(gv_ptr, [bh, s2, d], [vs0_, vs1_, vs2_])
    tiles_n = asc2.ceildiv(s2, tile_n)
    for t in asc2.range(asc2.block_idx(), bh * tiles_n, asc2.block_num()):
        b = t // tiles_n
        col = t % tiles_n * tile_n
        k = asc2.load(k_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        v = asc2.load(v_gm, [1, tile_n, d], offsets=[b, col, 0]).reshape(tile_n, d)
        k, v = k.to(asc2.float32), v.to(asc2.float32)
        gk = asc2.zeros([tile_n, d], asc2.float32)
        gv = asc2.zeros([tile_n, d], asc2.float32)
        for i in asc2.range(asc2.ceildiv(s1, tile_m)):
            row = i * tile_m
            q, grad, delta, qkmax, qksum = _rows(q_gm, g_gm, o_gm, max_gm, sum_gm, b, row,
                                                 tile_m, d)
            p, dqk = _p_dqk(q, k, v, grad, delta, qkmax, qksum, row, col, s1, s2, scale,
                            tile_m, tile_n)
            gk = asc2.matmul_acc(gk, _half(dqk).T, q)
            gv = asc2.matmul_acc(gv, _half(p).T, grad)
        asc2.store(gk.reshape(1, tile_n, d), gk_gm, offsets=[b, col, 0])
        asc2.store(gv.reshape(1, tile_n, d), gv_gm, offsets=[b, col, 0])


def _check(q, k, v, o=None, grad=None, qkmax=None, qksum=None):
    """[BH, S1, D] q/o/grad and [BH, S2, D] k/v of one float dtype, [BH, S1] float32 stats."""
    if q.dim() != 3:
        raise ValueError(f"q: expected [BH, S1, D], got {list(q.shape)}")
    bh, s1, d = q.shape
    for name, t, rows in (("k", k, None), ("v", v, k.shape[1] if k.dim() == 3 else None),
                          ("o", o, s1), ("grad", grad, s1)):
        if t is None:
            continue
        if t.dim() != 3 or t.shape[0] != bh or t.shape[2] != d or \
                (rows is not None and t.shape[1] != rows):
            want = f"[{bh}, {rows if rows is not None else 'S2'}, {d}]"
            raise ValueError(f"{name}: expected {want}, got {list(t.shape)}")
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: expected {q.dtype} like q, got {t.dtype}")
    for name, t in (("qkmax", qkmax), ("qksum", qksum)):
        if t is not None and (list(t.shape) != [bh, s1] or t.dtype != torch.float32):
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


def attn_backward_dense_stage1(q, k, v, grad, qk=None, dp=None, core_num=0):
    """Stage 1: (qk = q k^T, dp = grad v^T), float32 [BH, S1, S2] (unscaled)."""
    bh, s1, s2, d = _check(q, k, v, grad=grad)
    qk = _output(qk, (bh, s1, s2), "qk")
    dp = _output(dp, (bh, s1, s2), "dp")
    attn_backward_stage1_kernel[core_num](q, k, v, grad, qk, dp, bh, s1, s2, *q.stride(),
                                          *k.stride(), *v.stride(), *grad.stride(),
                                          *qk.stride(), *dp.stride(), d, TILE_M, TILE_N)
    return qk, dp


def _inputs(q, k, v, o, grad, qkmax, qksum):
    return (q, k, v, o, grad, qkmax, qksum), (*q.stride(), *k.stride(), *v.stride(),
                                              *o.stride(), *grad.stride(), *qkmax.stride(),
                                              *qksum.stride())


def attn_backward_dense_stage12(q, k, v, o, grad, qkmax, qksum, scale=None, p=None, dqk=None,
                                core_num=0):
    """Stages 1+2: (p, dqk), float32 [BH, S1, S2], p = exp(q k^T·scale - qkmax) / (qksum +
    1e-10), dqk = p·(grad v^T - rowsum(o·grad))·scale."""
    bh, s1, s2, d = _check(q, k, v, o, grad, qkmax, qksum)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    p = _output(p, (bh, s1, s2), "p")
    dqk = _output(dqk, (bh, s1, s2), "dqk")
    tensors, strides = _inputs(q, k, v, o, grad, qkmax, qksum)
    attn_backward_stage12_kernel[core_num](*tensors, p, dqk, bh, s1, s2, scale, *strides,
                                           *p.stride(), *dqk.stride(), d, TILE_M, TILE_N)
    return p, dqk


def attn_backward_dense(q, k, v, o, grad, qkmax, qksum, scale=None, gq=None, gk=None, gv=None,
                        core_num=0):
    """q, o, grad: [BH, S1, D], k, v: [BH, S2, D] (float16/bfloat16/float32, one dtype, any
    strides), qkmax, qksum: float32 [BH, S1] from the forward; returns float32
    (gq [BH, S1, D], gk [BH, S2, D], gv [BH, S2, D]):
    gq = dqk.half() @ k, gk = dqk.half()^T @ q, gv = p.half()^T @ grad."""
    bh, s1, s2, d = _check(q, k, v, o, grad, qkmax, qksum)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    gq = _output(gq, (bh, s1, d), "gq")
    gk = _output(gk, (bh, s2, d), "gk")
    gv = _output(gv, (bh, s2, d), "gv")
    tensors, strides = _inputs(q, k, v, o, grad, qkmax, qksum)
    attn_backward_gq_kernel[core_num](*tensors, gq, bh, s1, s2, scale, *strides, *gq.stride(),
                                      d, TILE_M, TILE_N)
    attn_backward_gkv_kernel[core_num](*tensors, gk, gv, bh, s1, s2, scale, *strides,
                                       *gk.stride(), *gv.stride(), d, TILE_M, TILE_N)
    return gq, gk, gv


def reference(q, k, v, o, grad, qkmax, qksum, scale=None):
    """float64 numpy of CATALOG.md's formulas: (qk, dp, p, dqk, gq, gk, gv), the .half() of the
    gradient matmuls' operands as numpy's float64 -> float16 (to nearest even)."""
    qd, kd, vd, od, gd = (t.double().numpy() for t in (q, k, v, o, grad))
    scale = 1.0 / math.sqrt(qd.shape[-1]) if scale is None else scale
    qk = qd @ kd.swapaxes(1, 2)
    dp = gd @ vd.swapaxes(1, 2)
    p = np.exp(qk * scale - qkmax.double().numpy()[..., None]) / \
        (qksum.double().numpy()[..., None] + EPS)
    dqk = p * (dp - (od * gd).sum(-1, keepdims=True)) * scale
    dqk_h, p_h = (x.astype(np.float16).astype(np.float64) for x in (dqk, p))
    return qk, dp, p, dqk, dqk_h @ kd, dqk_h.swapaxes(1, 2) @ qd, p_h.swapaxes(1, 2) @ gd


def forward_statistics(q, k, v, scale=None):
    """float64 (o, qkmax, qksum) of softmax attention: what the forward hands the backward."""
    qd, kd, vd = (t.double().numpy() for t in (q, k, v))
    scale = 1.0 / math.sqrt(qd.shape[-1]) if scale is None else scale
    score = (qd @ kd.swapaxes(1, 2)) * scale
    m = score.max(-1, keepdims=True)
    e = np.exp(score - m)
    l = e.sum(-1, keepdims=True)
    return (e / l) @ vd, m[..., 0], l[..., 0]


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: the total backward and torch autograd of the manual
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

    def manual():
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        out = torch.softmax(torch.bmm(qf, kf.transpose(1, 2)) * scale, -1) @ vf
        out.backward(grad.float())
        return qf.grad, kf.grad, vf.grad

    return {"run": lambda: attn_backward_dense(q, k, v, o, grad, qkmax, qksum, None, *outs),
            "torch": manual, "flops": 14.0 * b * h * s1 * s2 * d}  # 7 matmuls run


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    q, grad = (torch.randn((2, 70, 32)).half() for _ in "qg")
    k, v = (torch.randn((2, 90, 32)).half() for _ in "kv")
    o, qkmax, qksum = (torch.from_numpy(x) for x in forward_statistics(q, k, v))
    args = (q, k, v, o.half(), grad, qkmax.float(), qksum.float())
    for g, w in zip(attn_backward_dense(*args), reference(*args)[4:]):
        np.testing.assert_allclose(g.numpy(), w, rtol=3e-3, atol=3e-3)
