"""rotary_embedding in vLLM's call form `rotary_embedding(positions, query, key, head_size,
cos_sin_cache, is_neox)`, in place, with the batched shapes of vLLM's test_pos_encoding:
positions [batch, seq] and query/key [batch, seq, H*D] or [batch, seq, H, D], against a float64
torch rendering of vLLM's RotaryEmbedding.forward_native; views included."""

import pytest
import torch

from conftest import assert_close
from tileops import ops

MAX_POS = 256


def vllm_cache(rot, max_pos=MAX_POS, base=10000.0):
    """RotaryEmbedding._compute_cos_sin_cache: cos(p * f_i) then sin(p * f_i), in float32."""
    inv_freq = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.float) / rot))
    freqs = torch.einsum("i,j->ij", torch.arange(max_pos, dtype=torch.float), inv_freq)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1)


def forward_native(positions, x, head_size, cache, neox):
    """vLLM's forward_native for one operand, in float64: the tokens are positions flattened."""
    positions = positions.flatten()
    num_tokens = positions.shape[0]
    rot = cache.shape[1]
    cos, sin = cache.double().index_select(0, positions.long()).chunk(2, dim=-1)
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    y = x.double().reshape(num_tokens, -1, head_size)
    y_rot, y_pass = y[..., :rot], y[..., rot:]
    if neox:
        x1, x2 = torch.chunk(y_rot, 2, dim=-1)
        y_rot = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    else:
        x1, x2 = y_rot[..., ::2], y_rot[..., 1::2]
        y_rot = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
    return torch.cat((y_rot, y_pass), dim=-1).reshape(x.shape)


SHAPES = {
    "bs_hd": lambda b, s, h, d: (b, s, h * d),
    "bs_h_d": lambda b, s, h, d: (b, s, h, d),
    "t_h_d": lambda b, s, h, d: (b * s, h, d),
}


def run_and_check(positions, query, key, head_size, cache, neox, dtype):
    ref_q = forward_native(positions, query, head_size, cache, neox)
    ref_k = forward_native(positions, key, head_size, cache, neox) if key is not None else None
    got_q, got_k = ops.rotary_embedding(positions, query, key, head_size, cache, neox)
    assert got_q is query and got_k is key
    assert_close(query, ref_q, dtype)
    if key is not None:
        assert_close(key, ref_k, dtype)


@pytest.mark.parametrize("use_key", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rotary_dim", [None, 32])
@pytest.mark.parametrize("head_size", [64, 80])
@pytest.mark.parametrize("seq_len", [11, 40])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("neox", [True, False])
def test_vllm_pos_encoding_forms(neox, shape, seq_len, head_size, rotary_dim, dtype, use_key):
    batch, heads = 5, 3
    rot = head_size if rotary_dim is None else rotary_dim
    gen = torch.Generator().manual_seed(seq_len + head_size)
    lead = (batch * seq_len,) if shape == "t_h_d" else (batch, seq_len)
    positions = torch.randint(0, MAX_POS, lead, generator=gen)
    query = torch.randn(SHAPES[shape](batch, seq_len, heads, head_size), generator=gen).to(dtype)
    key = torch.randn(query.shape, generator=gen).to(dtype) if use_key else None
    # vLLM hands the cache over in the query's dtype.
    run_and_check(positions, query, key, head_size, vllm_cache(rot).to(dtype), neox, dtype)


@pytest.mark.parametrize("use_key", [True, False])
@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("head_size", [32, 108])
@pytest.mark.parametrize("neox", [True, False])
def test_vllm_padded_head_views(neox, head_size, flat, use_key):
    # vLLM's opcheck case: query[..., :head_size] of [batch, seq, H, head_size + 64], and the
    # [batch, seq, H*D] form: a view of the qkv projection's row (every row padded).
    gen = torch.Generator().manual_seed(head_size)
    positions = torch.randint(0, MAX_POS, (1, 11), generator=gen)
    width = (1, 11, 7 * head_size + 64) if flat else (1, 11, 7, head_size + 64)
    q_all = torch.randn(width, generator=gen)
    k_all = torch.randn(width, generator=gen) if use_key else None
    cut = 7 * head_size if flat else head_size
    query = q_all[..., :cut]
    key = k_all[..., :cut] if use_key else None
    assert not query.is_contiguous()
    q_pad = q_all[..., cut:].clone()
    run_and_check(positions, query, key, head_size, vllm_cache(32), neox, torch.float32)
    assert torch.equal(q_all[..., cut:], q_pad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("neox", [True, False])
def test_transposed_batch_and_seq(neox, dtype):
    # [batch, seq] views of [seq, batch] storage: the tokens do not collapse into one stride.
    gen = torch.Generator().manual_seed(3)
    positions = torch.randint(0, MAX_POS, (6, 4), generator=gen, dtype=torch.int32).t()
    query = torch.randn(6, 4, 2, 16, generator=gen).to(dtype).transpose(0, 1)
    key = torch.randn(6, 4, 16, generator=gen).to(dtype).transpose(0, 1)
    run_and_check(positions, query, key, 16, vllm_cache(8), neox, dtype)
    # Out of place into poisoned outputs of yet another layout.
    q_in, k_in = query.clone(), key.clone()
    q_out = torch.full((4, 6, 2, 16), float("nan"), dtype=dtype)
    k_out = torch.full((6, 4, 16), float("nan"), dtype=dtype).transpose(0, 1)
    got_q, got_k = ops.rotary_embedding(positions, q_in, k_in, 16, vllm_cache(8), neox, None,
                                        q_out, k_out)
    assert got_q is q_out and got_k is k_out
    assert_close(q_out, forward_native(positions, q_in, 16, vllm_cache(8), neox), dtype)
    assert_close(k_out, forward_native(positions, k_in, 16, vllm_cache(8), neox), dtype)


def test_batched_shape_errors():
    positions = torch.randint(0, MAX_POS, (2, 3))
    query = torch.randn(2, 3, 2 * 16)
    cache = vllm_cache(16)
    with pytest.raises(ValueError, match=r"'query'.*\[2, 3, H\*16\] or \[2, 3, H, 16\]"):
        ops.rotary_embedding(positions, torch.randn(3, 2, 32), None, 16, cache, True)
    with pytest.raises(ValueError, match="'query'"):
        ops.rotary_embedding(positions, torch.randn(6, 32), None, 16, cache, True)
    with pytest.raises(ValueError, match="'key'"):
        ops.rotary_embedding(positions, query, torch.randn(2, 4, 16), 16, cache, True)
    with pytest.raises(ValueError, match="'query'"):
        ops.rotary_embedding(positions.flatten(), query, None, 16, cache, True)
    with pytest.raises(ValueError, match="'positions'"):
        ops.rotary_embedding(torch.tensor(1), torch.randn(1, 32), None, 16, cache, True)
    bad = positions.clone()
    bad[1, 2] = MAX_POS
    before = query.clone()
    with pytest.raises(ValueError, match=r"'positions'.*positions\[1, 2\]"):
        ops.rotary_embedding(bad, query, None, 16, cache, True)
    assert torch.equal(query, before)

