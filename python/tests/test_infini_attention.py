"""tileops.infini's attention and samplers: the InfiniOps forms against tileops.ops and torch 1.13
references (float64 math; conftest.TOLERANCE), with bad inputs."""

import numpy as np
import pytest
import torch

from conftest import FLOATS, make, poisoned
from test_attention import check as check_attention, cu, paged, reference as attention_ref
from tileops import infini
from tileops import ops


# ---- attention ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (8, 2)])
def test_flash_attention_infiniops_order(dtype, heads, kv_heads):
    q_lens, kv_lens = [3, 17], [3, 30]
    q = make((20, heads, 64), dtype, seed=1)
    k, v = make((33, kv_heads, 64), dtype, seed=2), make((33, kv_heads, 64), dtype, seed=3)
    scale = 64 ** -0.5
    out = poisoned(q.shape, dtype)
    # output comes before sliding_window in InfiniOps' order.
    infini.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), None, heads, kv_heads, 64, scale,
                           True, -1, -1, 0, out, stream=0)
    assert torch.equal(out, ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                                                scale=scale))
    check_attention(out, attention_ref(q, k, v, q_lens, kv_lens, causal=True), dtype, 64)
    # Paged KV: [num_blocks, block_size, Hkv, D] with a block table.
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    out2 = poisoned(q.shape, dtype)
    infini.flash_attention(q, kc, vc, cu(q_lens), cu(kv_lens), table, heads, kv_heads, 64, scale,
                           True, -1, -1, 16, out2)
    assert torch.equal(out2, out)


def test_flash_attention_sliding_window_forms():
    q = make((40, 4, 64), torch.float32, seed=4)
    k, v = make((40, 4, 64), torch.float32, seed=5), make((40, 4, 64), torch.float32, seed=6)
    lens = cu([40])
    pair, single = poisoned(q.shape, torch.float32), poisoned(q.shape, torch.float32)
    infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, 7, 0, 0, pair)
    infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, -1, -1, 0, single,
                           sliding_window=8)
    assert torch.equal(pair, single)
    check_attention(pair, attention_ref(q, k, v, [40], [40], True, 7, 0, 0.125), torch.float32,
                    64)
    both = poisoned(q.shape, torch.float32)
    infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, 7, 0, 0, both, 8)
    assert torch.equal(both, pair)
    with pytest.raises(ValueError, match="sliding_window"):
        infini.flash_attention(q, k, v, lens, lens, None, 4, 4, 64, 0.125, True, 3, 0, 0, both,
                               sliding_window=8)
    with pytest.raises(ValueError, match="num_heads"):
        infini.flash_attention(q, k, v, lens, lens, None, 3, 4, 64, 0.125, True, -1, -1, 0, both)
    # int64 cu_seqlens, as InfiniOps' own test passes them.
    wide = poisoned(q.shape, torch.float32)
    infini.flash_attention(q, k, v, lens.long(), lens.long(), None, 4, 4, 64, 0.125, True, 7, 0,
                           0, wide)
    assert torch.equal(wide, pair)


@pytest.mark.parametrize("dtype", FLOATS)
def test_paged_attention(dtype):
    kv_lens = [1, 17, 70]
    q = make((3, 8, 64), dtype, seed=7)
    k, v = make((88, 2, 64), dtype, seed=8), make((88, 2, 64), dtype, seed=9)
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    out = poisoned(q.shape, dtype)
    infini.paged_attention(q, kc, vc, lens, table, 8, 2, 64, 0.125, 16, out, stream=0)
    assert torch.equal(out, ops.paged_attention(q, kc, vc, lens, table, scale=0.125))
    check_attention(out, attention_ref(q, k, v, [1] * 3, kv_lens, scale=0.125), dtype, 64)
    out2 = poisoned(q.shape, dtype)
    infini.paged_attention(q, kc, vc, lens, table, 8, 2, 64, 0.125, 16, out2,
                           seq_lens_host=lens, block_table_host=table)
    assert torch.equal(out2, out)
    with pytest.raises(ValueError, match="block_size"):
        infini.paged_attention(q, kc, vc, lens, table, 8, 2, 64, 0.125, 8, out2)


def varlen_args(q, k, v, out, q_lens, kv_lens, table=None, num_splits=0):
    """InfiniOps' mha_varlen_fwd argument list, as its test writes it."""
    return (q, k, v, out, cu(q_lens), cu(kv_lens), None, None, table, None, max(q_lens),
            max(kv_lens), 0.0, 0.125, False, True, -1, 0, 0.0, False, None, num_splits)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("num_splits", [0, 1, 4])
def test_mha_varlen_fwd(dtype, num_splits):
    q_lens, kv_lens = [5, 9], [20, 9]
    q = make((14, 4, 64), dtype, seed=10)
    k, v = make((29, 2, 64), dtype, seed=11), make((29, 2, 64), dtype, seed=12)
    out = poisoned(q.shape, dtype)
    infini.mha_varlen_fwd(*varlen_args(q, k, v, out, q_lens, kv_lens, num_splits=num_splits),
                          stream=0)
    own = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), scale=0.125, causal=True,
                              window_left=-1, window_right=0)
    assert torch.equal(out, own)
    check_attention(out, attention_ref(q, k, v, q_lens, kv_lens, True, -1, 0, 0.125), dtype, 64)
    kc, table = paged(k, kv_lens, 8)
    vc, _ = paged(v, kv_lens, 8)
    out2 = poisoned(q.shape, dtype)
    infini.mha_varlen_fwd(*varlen_args(q, kc, vc, out2, q_lens, kv_lens, table))
    assert torch.equal(out2, out)
    with pytest.raises(TypeError, match="num_splits"):
        infini.mha_varlen_fwd(*varlen_args(q, k, v, out, q_lens, kv_lens, num_splits=1.5))
    with pytest.raises(NotImplementedError, match="alibi_slopes"):
        infini.mha_varlen_fwd(q, k, v, out, cu(q_lens), cu(kv_lens), None, None, None,
                              torch.ones(4), 9, 20, 0.0, 0.125, False, True, -1, 0, 0.0, False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mha_fwd_kvcache(dtype):
    kv_lens = [9, 40]
    q = make((2, 1, 4, 64), dtype, seed=13)
    k, v = make((49, 2, 64), dtype, seed=14), make((49, 2, 64), dtype, seed=15)
    kc, table = paged(k, kv_lens, 16)
    vc, _ = paged(v, kv_lens, 16)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    out = poisoned(q.shape, dtype)
    # InfiniOps' test's argument list.
    infini.mha_fwd_kvcache(q, kc, vc, None, None, lens, None, None, None, None, table, None, out,
                           0.125, True, -1, 0, 0.0, False, 0, stream=0)
    assert torch.equal(out, ops.mha_fwd_kvcache(q, kc, vc, seqlens_k=lens, block_table=table,
                                                softmax_scale=0.125, is_causal=True,
                                                window_size_right=0))
    check_attention(out[:, 0], attention_ref(q[:, 0], k, v, [1, 1], kv_lens, True, -1, 0, 0.125),
                    dtype, 64)


# ---- samplers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_top_k_top_p_sampler_peaked_rows_are_argmax(dtype):
    logits = torch.full((3, 16), -10.0, dtype=dtype)
    for i in range(3):
        logits[i, (i + 1) % 16] = 10.0
    out = torch.full((3,), -7, dtype=torch.int64)
    k, p = torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.float32)
    infini.top_k_top_p_sampler(logits, k, p, out, stream=0)
    assert out.tolist() == [1, 2, 3]
    out2 = torch.full((3,), -7, dtype=torch.int64)
    infini.top_k_top_p_sampler(logits, torch.ones(1, dtype=torch.int64), None, out2)
    assert torch.equal(out2, out)
    out3 = torch.full((3,), -7, dtype=torch.int64)
    infini.top_k_top_p_sampler(logits, out=out3)  # k and p default to None
    assert torch.equal(out3, out)


def test_top_k_top_p_sampler_writes_int32_tokens():
    # InfiniOps' contract writes int32 tokens; int64 (vLLM's) is the same draw.
    logits = make((4, 40), torch.float32, low=-1, high=1, seed=3)
    k, p = torch.full((4,), 5, dtype=torch.int64), torch.full((4,), 0.9)
    narrow = torch.full((4,), -7, dtype=torch.int32)
    wide = torch.full((4,), -7, dtype=torch.int64)
    torch.manual_seed(11)
    infini.top_k_top_p_sampler(logits, k, p, narrow, stream=0)
    torch.manual_seed(11)
    infini.top_k_top_p_sampler(logits, k, p, wide, stream=0)
    assert narrow.tolist() == wide.tolist()
    top5 = logits.topk(5, dim=-1).indices
    assert all(int(narrow[i]) in top5[i].tolist() for i in range(4))


def test_samplers_draw_from_the_global_generators():
    logits = make((4, 50), torch.float32, low=-1, high=1)
    probs = torch.softmax(logits, -1)

    def draw():
        a, b = torch.empty(4, dtype=torch.int64), torch.empty(4, dtype=torch.int32)
        infini.top_k_top_p_sampler(logits, None, None, a)
        infini.topk_topp_sampling(probs, 0, 1.0, b)
        return a, b

    torch.manual_seed(5)
    first = draw()
    torch.manual_seed(5)
    again = draw()
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    # Without a reseed, the next calls draw fresh seeds (12 draws over 50 tokens coincide
    # with probability ~1e-17).
    later = [draw() for _ in range(3)]
    assert any(not torch.equal(first[0], a) for a, _ in later)
    # numpy arrays draw from numpy's global generator.
    np.random.seed(3)
    n1 = np.empty(4, dtype=np.int64)
    infini.top_k_top_p_sampler(logits.numpy(), 5, 0.9, n1)
    np.random.seed(3)
    n2 = np.empty(4, dtype=np.int64)
    infini.top_k_top_p_sampler(logits.numpy(), 5, 0.9, n2)
    assert np.array_equal(n1, n2)
    assert set(n1.tolist()) <= set(torch.topk(logits, 5).indices.flatten().tolist())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_topk_topp_sampling(dtype):
    probs = torch.full((3, 16), 1e-3, dtype=dtype)
    for i in range(3):
        probs[i, i] = 1.0
    probs = probs / probs.sum(-1, keepdim=True)
    out = torch.full((3,), -7, dtype=torch.int32)
    infini.topk_topp_sampling(probs, 1, 1.0, out, stream=0)
    assert out.tolist() == [0, 1, 2]
    out2 = torch.full((3,), -7, dtype=torch.int32)
    infini.topk_topp_sampling(probs=probs, topk=1, topp=1.0, out=out2)
    assert torch.equal(out2, out)
    with pytest.raises(TypeError, match="missing argument 'topp'"):
        infini.topk_topp_sampling(probs, 1, out=out)
