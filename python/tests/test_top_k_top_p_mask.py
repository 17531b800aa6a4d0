"""top_k_top_p_mask (tileops.ops) and tileops.vllm.apply_top_k_top_p against vLLM's sort-based
algorithm written here in float64 torch: every float dtype, strided rows, per-row k (int32/int64)
and p, None k or p, ties, k = 1, k = V, tiny p, p = 1, -inf logits, bad inputs refused before
anything is written."""

import numpy as np
import pytest
import torch

from tileops import ops
from tileops import vllm

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
INF = float("inf")


def vllm_reference(logits, k, p):
    """vLLM's apply_top_k_top_p_pytorch in float64 with a stable sort: (masked, ambiguous), where
    ambiguous marks tokens within rounding of the nucleus boundary (either verdict passes)."""
    x = logits.double()
    s, idx = x.sort(dim=-1, stable=True)
    if k is not None:
        kth = s.gather(1, (x.shape[1] - k.long()).unsqueeze(1))
        s = s.masked_fill(s < kth, -INF)
    ambiguous = torch.zeros_like(s, dtype=torch.bool)
    if p is not None:
        probs = s.softmax(dim=-1)
        cumulative = probs.cumsum(dim=-1)
        limit = 1 - p.double().unsqueeze(1)
        mask = cumulative <= limit
        mask[:, -1] = False
        ambiguous = (cumulative - limit).abs() <= 4e-6
        s = s.masked_fill(mask, -INF)
    masked = torch.empty_like(s).scatter_(1, idx, s) == -INF
    ambiguous = torch.empty_like(ambiguous).scatter_(1, idx, ambiguous)
    return masked & (x != -INF), ambiguous


def check(before, after, k, p):
    masked, ambiguous = vllm_reference(before, k, p)
    got_masked = (after.double() == -INF) & (before.double() != -INF)
    kept_same = torch.where(got_masked, torch.zeros_like(before.double()),
                            after.double() - before.double())
    assert bool((kept_same == 0).all()), "a kept logit changed"
    wrong = (got_masked != masked) & ~ambiguous
    assert not bool(wrong.any()), f"{int(wrong.sum())} tokens differ, first at {wrong.nonzero()[0]}"


def rows_k(rows, vocab, dtype, gen):
    k = torch.randint(1, vocab + 1, (rows,), generator=gen)
    k[0], k[1 % rows] = 1, vocab
    return k.to(dtype)


def rows_p(rows, gen):
    p = torch.rand(rows, generator=gen) * 0.95 + 0.05
    p[0], p[1 % rows] = 1.0, 1e-7
    return p


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("vocab", [1, 50, 1000, 32003])
@pytest.mark.parametrize("mode", ["k", "p", "kp"])
def test_matches_vllm_algorithm(dtype, strided, vocab, mode):
    gen = torch.Generator().manual_seed(vocab * 3 + len(mode))
    rows = 5
    spread = 1.5 if mode == "p" else 4.0  # a long nucleus, or a short one
    wide = torch.randn(rows, vocab * (2 if strided else 1), generator=gen) * spread
    logits = wide.to(dtype)[:, ::2] if strided else wide.to(dtype)
    k_dtype = torch.int32 if mode == "kp" else torch.int64
    k = rows_k(rows, vocab, k_dtype, gen) if "k" in mode else None
    p = rows_p(rows, gen) if "p" in mode else None
    before = logits.clone()
    assert ops.top_k_top_p_mask(logits, k, p) is None
    check(before, logits, k, p)


def test_vllm_form_returns_logits_in_place():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 300, generator=gen).t().contiguous().t()  # column stride 4
    k = torch.tensor([1, 20, 300, 7], dtype=torch.int32)
    p = torch.tensor([0.5, 0.9, 0.3, 1.0])
    before = logits.clone()
    assert vllm.apply_top_k_top_p(logits, k, p) is logits
    check(before, logits, k, p)
    untouched = logits.clone()
    assert vllm.apply_top_k_top_p(untouched, None, None) is untouched
    assert torch.equal(untouched, logits)


def test_numpy_and_single_filters():
    logits = np.array([[1, 3, 3, 2, 3], [0, 0, 0, 0, 0]], dtype=np.float32)
    ops.top_k_top_p_mask(logits, np.array([2], dtype=np.int64), None)  # one k for every row
    assert logits[0].tolist() == [-INF, 3, 3, -INF, 3]  # ties at the k-th value stay
    assert logits[1].tolist() == [0, 0, 0, 0, 0]
    equal = torch.zeros(1, 4)
    ops.top_k_top_p_mask(equal, None, torch.tensor([0.5]))  # higher indices first
    assert equal.tolist() == [[-INF, -INF, 0, 0]]
    tiny = torch.tensor([[5.0, 1.0, 5.0, 2.0]])
    ops.top_k_top_p_mask(tiny, None, torch.tensor([1e-9], dtype=torch.float64))
    assert tiny.tolist() == [[-INF, -INF, 5.0, -INF]]
    with_inf = torch.tensor([[-INF, 2.0, -INF, 1.0], [-INF, -INF, -INF, -INF]])
    ops.top_k_top_p_mask(with_inf, torch.tensor([3, 3]), torch.tensor([0.99, 0.5]))
    assert with_inf.tolist() == [[-INF, 2.0, -INF, 1.0], [-INF] * 4]


def test_class_form():
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 100, generator=gen).to(torch.bfloat16)
    k = torch.tensor([5, 50, 100])
    p = torch.tensor([0.9, 0.5, 0.2])
    op = ops.TopKTopPMask(logits, k, p)
    before = logits.clone()
    op(logits, k, p)
    check(before, logits, k, p)
    k[1] = 0
    again = before.clone()
    with pytest.raises(ValueError, match="top_k_top_p_mask: argument 'k'"):
        op(again, k, p)
    assert torch.equal(again, before)


@pytest.mark.parametrize("call, error, arg", [
    (lambda x: ops.top_k_top_p_mask(x, torch.tensor([0, 1, 1]), None), ValueError, "k"),
    (lambda x: ops.top_k_top_p_mask(x, torch.tensor([9, 1, 1]), None), ValueError, "k"),
    (lambda x: ops.top_k_top_p_mask(x, torch.tensor([2, 2]), None), ValueError, "k"),
    (lambda x: ops.top_k_top_p_mask(x, torch.tensor([2.0, 2, 2]), None), TypeError, "k"),
    (lambda x: ops.top_k_top_p_mask(x, None, torch.tensor([0.5, 0.0, 0.5])), ValueError, "p"),
    (lambda x: ops.top_k_top_p_mask(x, None, torch.tensor([0.5, 1.5, 0.5])), ValueError, "p"),
    (lambda x: ops.top_k_top_p_mask(x, None, torch.tensor([float("nan")])), ValueError, "p"),
    (lambda x: ops.top_k_top_p_mask(x, None, torch.tensor([1, 1, 1])), TypeError, "p"),
    (lambda x: ops.top_k_top_p_mask(x[0], torch.tensor([2]), None), ValueError, "logits"),
    (lambda x: vllm.apply_top_k_top_p(x.double(), torch.tensor([2, 2, 2]), None), TypeError,
     "logits"),
])
def test_bad_inputs_name_the_argument(call, error, arg):
    logits = torch.randn(3, 8)
    before = logits.clone()
    with pytest.raises(error, match=f"top_k_top_p_mask: argument '{arg}'"):
        call(logits)
    assert torch.equal(logits, before)


@pytest.mark.parametrize("bad", [float("nan"), INF])
def test_nan_or_inf_logits_write_nothing(bad):
    logits = torch.randn(4, 16)
    logits[3, 5] = bad
    before = logits.clone()
    with pytest.raises(ValueError, match="argument 'logits'.*row 3"):
        ops.top_k_top_p_mask(logits, torch.tensor([2]), torch.tensor([0.5]))
    assert torch.equal(logits.nan_to_num(), before.nan_to_num())
