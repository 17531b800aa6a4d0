"""The WY representation's two products of the chunked gated delta rule (fla's recompute_w_u):
per chunk of C tokens, k_cumdecay = attn @ (k_beta·decay).half() and kv = attn @ v, where attn
[C, C] is the chunk's (I + A)⁻¹ (lower triangular) and decay = exp(cumulative g)."""

import numpy as np
import torch

from tileops import asc, asc2


@asc2.jit
def recompute_wu_kernel(a_ptr, kb_ptr, dec_ptr, v_ptr, w_ptr, u_ptr, bh, t,
                        as0, as1, as2, ks0, ks1, ks2, ds0, ds1, vs0, vs1, vs2,
                        ws0, ws1, ws2, us0, us1, us2, c: asc.ConstExpr[int],
                        d: asc.ConstExpr[int]):
    a_gm = asc2.tensor(a_ptr, [bh, t, c], [as0, as1, as2])
    kb_gm = asc2.tensor(kb_ptr, [bh, t, d], [ks0, ks1, ks2])
    dec_gm = asc2.tensor(dec_ptr, [bh, t, 1], [ds0, ds1, 1])  # a column per chunk
    v_gm = asc2.tensor(v_ptr, [bh, t, d], [vs0, vs1, vs2])
    w_gm = asc2.tensor(w_ptr, [bh, t, d], [ws0, ws1, ws2])
    u_gm = asc2.tensor(u_ptr, [bh, t, d], [us0, us1, us2])
    chunks = asc2.ceildiv(t, c)
    for item in asc2.range(asc2.block_idx(), bh * chunks, asc2.block_num()):
        b = item // chunks
        row = item % chunks * c
        # Rows past T load as zeros, so the last chunk's products see only its tokens.
        a = asc2.load(a_gm, [1, c, c], offsets=[b, row, 0]).reshape(c, c).to(asc2.float32)
        kb = asc2.load(kb_gm, [1, c, d], offsets=[b, row, 0]).reshape(c, d).to(asc2.float32)
        dec = asc2.load(dec_gm, [1, c, 1], offsets=[b, row, 0]).reshape(c, 1).to(asc2.float32)
        v = asc2.load(v_gm, [1, c, d], offsets=[b, row, 0]).reshape(c, d).to(asc2.float32)
        kd = (kb * dec).to(asc2.float16).to(asc2.float32)  # the product's value path
        asc2.store(asc2.matmul(a, kd).reshape(1, c, d), w_gm, offsets=[b, row, 0])
        asc2.store(asc2.matmul(a, v).reshape(1, c, d), u_gm, offsets=[b, row, 0])


def recompute_wu(attn, k_beta, decay, v, k_cumdecay=None, kv=None, core_num=0):
    """attn: [BH, T, C] (chunk j's [C, C] block in rows j·C..), k_beta, v: [BH, T, D], decay:
    [BH, T] (float16/bfloat16/float32, any strides). Returns (k_cumdecay, kv), float32
    [BH, T, D] each; the last chunk may be partial (T any)."""
    if attn.dim() != 3:
        raise ValueError(f"attn: expected [BH, T, C], got {list(attn.shape)}")
    bh, t, c = attn.shape
    if k_beta.dim() != 3 or list(k_beta.shape[:2]) != [bh, t]:
        raise ValueError(f"k_beta: expected [{bh}, {t}, D], got {list(k_beta.shape)}")
    d = k_beta.shape[2]
    if list(v.shape) != [bh, t, d]:
        raise ValueError(f"v: expected [{bh}, {t}, {d}] like k_beta, got {list(v.shape)}")
    if list(decay.shape) != [bh, t]:
        raise ValueError(f"decay: expected [{bh}, {t}], got {list(decay.shape)}")
    outs = []
    for name, x in (("k_cumdecay", k_cumdecay), ("kv", kv)):
        if x is None:
            x = torch.empty((bh, t, d), dtype=torch.float32)
        if list(x.shape) != [bh, t, d] or x.dtype != torch.float32:
            raise ValueError(f"{name}: expected float32 [{bh}, {t}, {d}], got {x.dtype} "
                             f"{list(x.shape)}")
        outs.append(x)
    recompute_wu_kernel[core_num](attn, k_beta, decay, v, *outs, bh, t, *attn.stride(),
                                  *k_beta.stride(), *decay.stride(), *v.stride(),
                                  *outs[0].stride(), *outs[1].stride(), c, d)
    return tuple(outs)


def reference(attn, k_beta, decay, v):
    """float64 numpy per chunk; (k_beta·decay) is formed in float32 and rounded to float16 as
    the kernel's value path does (elementwise, so bit for bit the same)."""
    bh, t, c = attn.shape
    kd = (k_beta.float() * decay.float()[:, :, None]).half().double().numpy()
    a, vv = attn.double().numpy(), v.double().numpy()
    w, u = np.zeros(kd.shape), np.zeros(vv.shape)
    for row in range(0, t, c):
        end = min(row + c, t)
        blk = a[:, row:end, : end - row]
        w[:, row:end] = blk @ kd[:, row:end]
        u[:, row:end] = blk @ vv[:, row:end]
    return w, u


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and the same products in torch."""
    b, h, t, d = shape
    c = 64
    gen = torch.Generator().manual_seed(0)
    dt = getattr(torch, dtype)
    attn = torch.randn((b * h, t, c), generator=gen).tril().to(dt)
    kb, v = (torch.randn((b * h, t, d), generator=gen).to(dt) for _ in "kv")
    decay = torch.rand((b * h, t), generator=gen).to(dt)
    outs = torch.empty((b * h, t, d)), torch.empty((b * h, t, d))
    af = attn.float().reshape(b * h, t // c, c, c)
    kdf = (kb.float() * decay.float()[:, :, None]).half().float().reshape(b * h, t // c, c, d)
    vf = v.float().reshape(b * h, t // c, c, d)

    def manual():
        return af @ kdf, af @ vf

    return {"run": lambda: recompute_wu(attn, kb, decay, v, *outs), "torch": manual,
            "flops": 4.0 * b * h * t * c * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    gen = torch.Generator().manual_seed(1)
    attn = torch.randn((2, 70, 64), generator=gen).tril()
    kb, v = torch.randn((2, 70, 32), generator=gen), torch.randn((2, 70, 32), generator=gen)
    decay = torch.rand((2, 70), generator=gen)
    got = recompute_wu(attn, kb, decay, v)
    for g, w in zip(got, reference(attn, kb, decay, v)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4)
