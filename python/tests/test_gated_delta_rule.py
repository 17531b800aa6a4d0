"""gated_delta_rule (tileops.ops) against fla's per-token recurrence written here in float64
torch (fused_recurrent_gated_delta_rule's math: S *= exp(g); S += k (beta (v - S^T k))^T;
o = scale S^T q): every float dtype, both forms (chunk_size 0 and 64), GVA, non-contiguous
inputs, cu_seqlens, the l2norm option, initial/final state (allocated, given, in place), the
default scale, and bad inputs refused with ValueError/TypeError before anything is written."""

import pytest
import torch

from tileops import ops

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 2e-4, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def reference(q, k, v, g, beta, scale, h0, cu, l2norm):
    """fla's recurrence in float64; returns (o, final_state)."""
    q, k, v, g, beta = (x.double() for x in (q, k, v, g, beta))
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    if l2norm:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    q = q * scale
    q = q.repeat_interleave(HV // H, dim=2)
    k = k.repeat_interleave(HV // H, dim=2)
    bounds = [(b, 0, T) for b in range(B)] if cu is None else [
        (0, int(cu[i]), int(cu[i + 1])) for i in range(len(cu) - 1)]
    o = torch.zeros(B, T, HV, V, dtype=torch.float64)
    S = torch.zeros(len(bounds), HV, K, V, dtype=torch.float64) if h0 is None else h0.double().clone()
    for n, (b, bos, eos) in enumerate(bounds):
        for t in range(bos, eos):
            s = S[n] * torch.exp(g[b, t])[:, None, None]
            kv = torch.einsum("hkv,hk->hv", s, k[b, t])
            delta = beta[b, t][:, None] * (v[b, t] - kv)
            s = s + k[b, t][:, :, None] * delta[:, None, :]
            o[b, t] = torch.einsum("hkv,hk->hv", s, q[b, t])
            S[n] = s
    return o, S


def inputs(B, T, H, HV, K, V, dtype, strided=False, seed=0):
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape, lo=-1.0, hi=1.0, dt=dtype):
        shape = list(shape)
        if strided:  # every other element of a wider last dim
            shape[-1] *= 2
        x = (torch.rand(*shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dt)
        return x[..., ::2] if strided else x

    kr = (3.0 / K) ** 0.5
    q = rnd(B, T, H, K)
    k = rnd(B, T, H, K, lo=-kr, hi=kr)
    v = rnd(B, T, HV, V)
    g = rnd(B, T, HV, lo=-0.7, hi=0.0, dt=torch.float32)
    beta = rnd(B, T, HV, lo=0.0, hi=1.0)
    return q, k, v, g, beta


def close(got, want, tol):
    err = (got.double() - want).abs() - tol * want.abs()
    assert err.max().item() <= tol, f"max excess {err.max().item()}"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("chunk_size", [0, 64])
def test_matches_float64_recurrence(dtype, chunk_size):
    q, k, v, g, beta = inputs(2, 70, 2, 4, 16, 24, dtype, strided=True, seed=1)
    h0 = torch.rand(2, 4, 16, 24, dtype=torch.float64).float() - 0.5
    o, ht = ops.gated_delta_rule(q, k, v, g, beta, 0.3, h0, chunk_size=chunk_size)
    o_ref, ht_ref = reference(q, k, v, g, beta, 0.3, h0, None, False)
    assert o.dtype == dtype and o.shape == v.shape and ht.dtype == torch.float32
    close(o, o_ref, TOL[dtype])
    close(ht, ht_ref, 2e-4)


@pytest.mark.parametrize("chunk_size", [0, 64])
def test_varlen_l2norm_default_scale(chunk_size):
    dtype = torch.bfloat16
    q, k, v, g, beta = inputs(1, 100, 1, 2, 12, 20, dtype, seed=2)
    cu = torch.tensor([0, 5, 5, 100], dtype=torch.int32)
    o, ht = ops.gated_delta_rule(q, k, v, g, beta, None, None, cu,
                                 use_qk_l2norm_in_kernel=True, chunk_size=chunk_size)
    o_ref, ht_ref = reference(q, k, v, g, beta, 12 ** -0.5, None, cu, True)
    assert ht.shape == (3, 2, 12, 20)
    close(o, o_ref, TOL[dtype])
    close(ht, ht_ref, 2e-4)


def test_chunked_agrees_with_recurrent_float32():
    q, k, v, g, beta = inputs(1, 150, 2, 2, 64, 64, torch.float32, seed=3)
    h0 = torch.randn(1, 2, 64, 64)
    o0, s0 = ops.gated_delta_rule(q, k, v, g, beta, None, h0, use_qk_l2norm_in_kernel=True)
    o1, s1 = ops.gated_delta_rule(q, k, v, g, beta, None, h0, use_qk_l2norm_in_kernel=True,
                                  chunk_size=64)
    assert (o0 - o1).abs().max().item() < 1e-4
    assert (s0 - s1).abs().max().item() < 1e-4


def test_decode_in_place():
    q, k, v, g, beta = inputs(4, 1, 2, 4, 16, 16, torch.float16, seed=4)
    state = torch.randn(4, 4, 16, 16)
    o_ref, s_ref = reference(q, k, v, g, beta, 0.25, state, None, False)
    o, s = ops.gated_delta_rule(q, k, v, g, beta, 0.25, state, final_state=state)
    assert s is state
    close(o, o_ref, TOL[torch.float16])
    close(state, s_ref, 2e-4)


def test_bad_inputs():
    q, k, v, g, beta = inputs(1, 4, 2, 4, 8, 8, torch.float32)
    o = torch.full_like(v, 7.0)
    with pytest.raises(ValueError, match="chunk_size"):
        ops.gated_delta_rule(q, k, v, g, beta, chunk_size=16, o=o)
    assert (o == 7.0).all()
    with pytest.raises(ValueError, match="'v'"):
        ops.gated_delta_rule(q, k, v[:, :, :3], g[:, :, :3], beta[:, :, :3])
    with pytest.raises(ValueError, match="cu_seqlens"):
        ops.gated_delta_rule(q, k, v, g, beta, cu_seqlens=torch.tensor([0, 2, 3]))
    with pytest.raises(TypeError, match="initial_state"):
        ops.gated_delta_rule(q, k, v, g, beta, None, torch.zeros(1, 4, 8, 8, dtype=torch.float16))
    with pytest.raises(TypeError, match="'v'"):
        ops.gated_delta_rule(q, k, v.half(), g, beta)
