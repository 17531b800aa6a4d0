"""flash_attention(..., return_softmax_lse=True) as vLLM's flash_attn_varlen_func: (out, lse) with
lse float32 [num_heads, Tq], against torch's logsumexp of the manual attention's scaled, masked
scores in float64 (-inf for rows that see no key): varlen GQA, causal bottom-right, sliding
windows, paged caches, every float dtype and implementation, a given (strided, poisoned) lse,
the class form, and bad lse tensors. Tolerance: 2e-5 abs + rel (float32 sums of exponentials)."""

import pytest
import torch

from conftest import FLOATS, indices, poisoned
from test_attention import check, cu, make, paged, reference
from tileops import ops

LSE_TOLERANCE = 2e-5


def reference_lse(q, k, q_lens, kv_lens, causal=False, left=-1, right=-1, scale=None):
    """logsumexp over each row's visible scaled scores, [H, Tq] in float64."""
    h, d = q.shape[1], q.shape[2]
    group = h // k.shape[1]
    scale = d ** -0.5 if scale is None else scale
    lse, qs, ks = [], 0, 0
    for lq, lk in zip(q_lens, kv_lens):
        qi = q[qs:qs + lq].double().transpose(0, 1)
        ki = k[ks:ks + lk].double().repeat_interleave(group, 1).transpose(0, 1)
        scores = qi @ ki.transpose(1, 2) * scale
        i = torch.arange(lq)[:, None] + lk - lq
        j = torch.arange(lk)[None, :]
        visible = torch.ones(lq, lk, dtype=torch.bool)
        if causal:
            visible &= j <= i
        if left >= 0:
            visible &= j >= i - left
        if right >= 0:
            visible &= j <= i + right
        lse.append(torch.logsumexp(scores.masked_fill(~visible, float("-inf")), -1))
        qs, ks = qs + lq, ks + lk
    return torch.cat(lse, 1)


def check_lse(got, ref):
    assert got.dtype == torch.float32 and got.shape == ref.shape
    got = got.double()
    assert torch.equal(torch.isinf(got), torch.isinf(ref)), "-inf rows differ"
    assert bool((got[torch.isinf(ref)] == ref[torch.isinf(ref)]).all())
    finite = torch.isfinite(ref)
    err = (got[finite] - ref[finite]).abs()
    assert bool((err <= LSE_TOLERANCE * (1 + ref[finite].abs())).all()), f"max error {err.max()}"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index", indices("flash_attention"))
def test_varlen_gqa_causal_bottom_right(dtype, index):
    # kv longer than q (bottom-right causal), and a sequence whose first rows see no key.
    q_lens, kv_lens, heads, kv_heads, d = [1, 17, 40, 9], [5, 17, 60, 3], 8, 2, 80
    q = make((sum(q_lens), heads, d), dtype, seed=1)
    k = make((sum(kv_lens), kv_heads, d), dtype, seed=2)
    v = make((sum(kv_lens), kv_heads, d), dtype, seed=3)
    out, lse = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                                   return_softmax_lse=True, implementation_index=index)
    check(out, reference(q, k, v, q_lens, kv_lens, causal=True), dtype, d)
    ref = reference_lse(q, k, q_lens, kv_lens, causal=True)
    assert bool(torch.isinf(ref).any())
    check_lse(lse, ref)
    # Not asked for: only the output, equal to the one computed beside the lse.
    alone = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                                implementation_index=index)
    assert isinstance(alone, torch.Tensor)
    assert torch.equal(alone, out)


@pytest.mark.parametrize("index", indices("flash_attention"))
def test_windows_paged_and_given_lse(index):
    q_lens, kv_lens, heads, kv_heads, d = [33, 9], [33, 100], 4, 1, 64
    q = make((sum(q_lens), heads, d), torch.bfloat16, seed=4)
    k = make((sum(kv_lens), kv_heads, d), torch.bfloat16, seed=5)
    v = make((sum(kv_lens), kv_heads, d), torch.bfloat16, seed=6)
    # A given lse: a strided view, poisoned, written in place and returned.
    given = poisoned((heads, sum(q_lens)), torch.float32, "strided")
    out, lse = ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens), window_left=5,
                                   window_right=11, scale=0.3, softmax_lse=given,
                                   implementation_index=index)
    assert lse is given
    check_lse(given, reference_lse(q, k, q_lens, kv_lens, left=5, right=11, scale=0.3))
    kc, table = paged(k, kv_lens, 16, seed=1)
    vc, _ = paged(v, kv_lens, 16, seed=1)
    out, lse = ops.flash_attention(q, kc, vc, cu(q_lens), cu(kv_lens), table, causal=True,
                                   sliding_window=17, return_softmax_lse=True,
                                   implementation_index=index)
    check_lse(lse, reference_lse(q, k, q_lens, kv_lens, causal=True, left=16, right=0))
    check(out, reference(q, k, v, q_lens, kv_lens, causal=True, left=16, right=0),
          torch.bfloat16, d)


def test_class_form_and_bad_lse():
    q_lens, kv_lens = [9, 20], [9, 20]
    q, k, v = (make((29, 4, 64), torch.float32, seed=s) for s in (7, 8, 9))
    op = ops.FlashAttention(q, k, v, cu(q_lens), cu(kv_lens), causal=True,
                            return_softmax_lse=True)
    q2 = make((29, 4, 64), torch.float32, seed=10)
    out, lse = op(q2, k, v, cu(q_lens), cu(kv_lens))
    check_lse(lse, reference_lse(q2, k, q_lens, kv_lens, causal=True))
    check(out, reference(q2, k, v, q_lens, kv_lens, causal=True), torch.float32, 64)
    with pytest.raises(ValueError, match="softmax_lse"):  # [Tq, H] instead of [H, Tq]
        ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens),
                            softmax_lse=torch.empty(29, 4))
    with pytest.raises(TypeError, match="softmax_lse"):
        ops.flash_attention(q, k, v, cu(q_lens), cu(kv_lens),
                            softmax_lse=torch.empty(4, 29, dtype=torch.float64))
