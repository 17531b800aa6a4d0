"""The chunked gated delta rule's state bridge (fla's chunk_gated_delta_rule_fwd_h): per chunk
of C tokens, the state at the chunk's start h[c] = S, the corrected values v_new = u - w @ S,
and the next state S = S·exp(g_last) + kᵀ @ (v_new·exp(g_last - g)); float32 throughout."""

import numpy as np
import torch

from tileops import asc, asc2


@asc2.jit
def delta_h_chunk_kernel(k_ptr, w_ptr, u_ptr, g_ptr, h0_ptr, h_ptr, vn_ptr, s_ptr, bh, t,
                         ks0, ks1, ks2, ws0, ws1, ws2, us0, us1, us2, gs0, gs1,
                         h0s0, h0s1, h0s2, hs0, hs1, hs2, hs3, vs0, vs1, vs2, ss0, ss1, ss2,
                         c: asc.ConstExpr[int], d: asc.ConstExpr[int]):
    chunks = asc2.ceildiv(t, c)
    k_gm = asc2.tensor(k_ptr, [bh, t, d], [ks0, ks1, ks2])
    w_gm = asc2.tensor(w_ptr, [bh, t, d], [ws0, ws1, ws2])
    u_gm = asc2.tensor(u_ptr, [bh, t, d], [us0, us1, us2])
    g_gm = asc2.tensor(g_ptr, [bh, t, 1], [gs0, gs1, 1])  # a column per chunk
    h0_gm = asc2.tensor(h0_ptr, [bh, d, d], [h0s0, h0s1, h0s2])
    h_gm = asc2.tensor(h_ptr, [bh, chunks, d, d], [hs0, hs1, hs2, hs3])
    vn_gm = asc2.tensor(vn_ptr, [bh, t, d], [vs0, vs1, vs2])
    s_gm = asc2.tensor(s_ptr, [bh, d, d], [ss0, ss1, ss2])
    for b in asc2.range(asc2.block_idx(), bh, asc2.block_num()):
        s = asc2.load(h0_gm, [1, d, d], offsets=[b, 0, 0]).reshape(d, d)
        for j in asc2.range(chunks):
            row = j * c
            asc2.store(s.reshape(1, 1, d, d), h_gm, offsets=[b, j, 0, 0])
            # Rows past T load as zeros: their v_new is 0 and adds nothing to S.
            k = asc2.load(k_gm, [1, c, d], offsets=[b, row, 0]).reshape(c, d).to(asc2.float32)
            w = asc2.load(w_gm, [1, c, d], offsets=[b, row, 0]).reshape(c, d).to(asc2.float32)
            u = asc2.load(u_gm, [1, c, d], offsets=[b, row, 0]).reshape(c, d).to(asc2.float32)
            g = asc2.load(g_gm, [1, c, 1], offsets=[b, row, 0]).reshape(c, 1).to(asc2.float32)
            last = asc2.minimum(row + c, t) - 1
            g_last = asc2.load(g_gm, [1, 1, 1], offsets=[b, last, 0]).reshape(1, 1) \
                .to(asc2.float32)
            v_new = u - asc2.matmul(w, s)
            asc2.store(v_new.reshape(1, c, d), vn_gm, offsets=[b, row, 0])
            s = asc2.matmul_acc(s * asc2.exp(g_last), k.T, v_new * asc2.exp(g_last - g))
        asc2.store(s.reshape(1, d, d), s_gm, offsets=[b, 0, 0])


def delta_h_chunk(k, w, u, g, initial_state=None, chunk=64, h=None, v_new=None,
                  final_state=None, core_num=0):
    """k, w, u: [BH, T, D] (float16/bfloat16/float32 alike, any strides); g: [BH, T], the decay's
    cumulative sum within each chunk of `chunk` tokens (any float dtype); initial_state: float32
    [BH, D, D] or None (zeros). Returns (h float32 [BH, NT, D, D], the state at each chunk's
    start; v_new float32 [BH, T, D]; final_state float32 [BH, D, D]), NT = ceil(T / chunk)."""
    if k.dim() != 3:
        raise ValueError(f"k: expected [BH, T, D], got {list(k.shape)}")
    bh, t, d = k.shape
    for name, x in (("w", w), ("u", u)):
        if list(x.shape) != [bh, t, d]:
            raise ValueError(f"{name}: expected [{bh}, {t}, {d}] like k, got {list(x.shape)}")
        if x.dtype != k.dtype:
            raise TypeError(f"{name}: expected {k.dtype} like k, got {x.dtype}")
    if list(g.shape) != [bh, t]:
        raise ValueError(f"g: expected [{bh}, {t}], got {list(g.shape)}")
    if chunk < 1:
        raise ValueError(f"chunk: expected >= 1, got {chunk}")
    nt = -(-t // chunk)
    if initial_state is None:
        initial_state = torch.zeros((bh, d, d), dtype=torch.float32)
    outs = []
    for name, x, shape in (("initial_state", initial_state, [bh, d, d]), ("h", h, [bh, nt, d, d]),
                           ("v_new", v_new, [bh, t, d]), ("final_state", final_state, [bh, d, d])):
        if x is None:
            x = torch.empty(shape, dtype=torch.float32)
        if list(x.shape) != shape or x.dtype != torch.float32:
            raise ValueError(f"{name}: expected float32 {shape}, got {x.dtype} {list(x.shape)}")
        outs.append(x)
    h0, h, v_new, final_state = outs
    delta_h_chunk_kernel[core_num](k, w, u, g, h0, h, v_new, final_state, bh, t, *k.stride(),
                                   *w.stride(), *u.stride(), *g.stride(), *h0.stride(),
                                   *h.stride(), *v_new.stride(), *final_state.stride(), chunk, d)
    return h, v_new, final_state


def reference(k, w, u, g, initial_state=None, chunk=64):
    """float64 numpy state bridge; returns (h, v_new, final_state)."""
    k, w, u, g = (x.double().numpy() for x in (k, w, u, g))
    bh, t, d = k.shape
    s = np.zeros((bh, d, d)) if initial_state is None else initial_state.double().numpy()
    hs, v_new = [], np.zeros((bh, t, d))
    for row in range(0, t, chunk):
        end = min(row + chunk, t)
        hs.append(s.copy())
        v_new[:, row:end] = u[:, row:end] - w[:, row:end] @ s
        g_last = g[:, end - 1]
        scaled = v_new[:, row:end] * np.exp(g_last[:, None] - g[:, row:end])[:, :, None]
        s = s * np.exp(g_last)[:, None, None] + k[:, row:end].transpose(0, 2, 1) @ scaled
    return np.stack(hs, axis=1), v_new, s


def inputs(bh, t, d, dtype, chunk=64, seed=0):
    """k with |k| about 1, w and u of the sizes the WY form gives, g the in-chunk cumulative sum
    of decays in [-0.7, 0]."""
    gen = torch.Generator().manual_seed(seed)
    k = (torch.randn((bh, t, d), generator=gen) / d ** 0.5).to(dtype)
    w = (torch.randn((bh, t, d), generator=gen) / d ** 0.5).to(dtype)
    u = torch.randn((bh, t, d), generator=gen).to(dtype)
    steps = -0.7 * torch.rand((bh, t), generator=gen)
    g = torch.cat([x.cumsum(1) for x in steps.split(chunk, dim=1)], dim=1)
    return k, w, u, g


def bench_case(shape, dtype):
    """What `tileops catalog bench` times: this kernel and the same bridge in torch."""
    b, h, t, d = shape
    c = 64
    k, w, u, g = inputs(b * h, t, d, getattr(torch, dtype), c)
    outs = (torch.empty((b * h, t // c, d, d)), torch.empty((b * h, t, d)),
            torch.empty((b * h, d, d)))
    kf, wf, uf = k.float(), w.float(), u.float()

    def manual():
        s = torch.zeros((b * h, d, d))
        for row in range(0, t, c):
            vn = uf[:, row:row + c] - wf[:, row:row + c] @ s
            gl = g[:, row + c - 1]
            vn = vn * torch.exp(gl[:, None] - g[:, row:row + c])[:, :, None]
            s = s * torch.exp(gl)[:, None, None] + kf[:, row:row + c].transpose(1, 2) @ vn
        return s

    return {"run": lambda: delta_h_chunk(k, w, u, g, None, c, *outs), "torch": manual,
            "flops": 4.0 * b * h * t * d * d}


if __name__ == "__main__":  # a self-check on the backend asc.runtime.config selects
    k, w, u, g = inputs(2, 70, 32, torch.float32, chunk=16)
    h0 = torch.randn((2, 32, 32)) * 0.1
    got = delta_h_chunk(k, w, u, g, h0, chunk=16)
    for x, want in zip(got, reference(k, w, u, g, h0, chunk=16)):
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-4, atol=1e-4)
