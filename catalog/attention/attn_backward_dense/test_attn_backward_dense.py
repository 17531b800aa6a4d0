"""attn_backward_dense (stage 1, stages 1+2, total) against float64 numpy of the contract's
formulas, and the gradients against torch autograd of the manual attention; tails in S1 and
S2."""

import pytest
import torch

from catalog import _support as s
from catalog.attention.attn_backward_dense.kernel import (attn_backward_dense,
                                                          attn_backward_dense_stage1,
                                                          attn_backward_dense_stage12,
                                                          forward_statistics, reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]
SCALE = 0.1


def inputs(shape, dtype):
    """q, k, v, grad with non-contiguous strides, and the forward's o (rounded to dtype, a
    strided view too), qkmax and qksum (float32)."""
    b, h, s1, s2, d = shape
    dt = s.dtype_of(dtype)
    q = s.strided((b * h, s1, d), dt, seed=1, kind="swap")
    k = s.strided((b * h, s2, d), dt, seed=2)
    v = s.strided((b * h, s2, d), dt, seed=3, kind="swap")
    grad = s.strided((b * h, s1, d), dt, seed=4)
    o, qkmax, qksum = (torch.from_numpy(x) for x in forward_statistics(q, k, v, SCALE))
    o_view = s.strided((b * h, s1, d), dt, seed=5)
    o_view.copy_(o)
    return q, k, v, o_view, grad, qkmax.float(), qksum.float()


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_attn_backward_dense(case):
    backend, shape, dtype = case
    args = inputs(shape, dtype)
    q, k, v, o, grad = args[:5]
    bh, s1, s2, d = q.shape[0], q.shape[1], k.shape[1], q.shape[2]
    stage1 = s.poisoned((bh, s1, s2)), s.poisoned((bh, s1, s2))
    stage12 = s.poisoned((bh, s1, s2)), s.poisoned((bh, s1, s2))
    total = s.poisoned((bh, s1, d)), s.poisoned((bh, s2, d)), s.poisoned((bh, s2, d))
    with s.on_backend(backend):
        attn_backward_dense_stage1(q, k, v, grad, *stage1)
        attn_backward_dense_stage12(*args, SCALE, *stage12)
        attn_backward_dense(*args, SCALE, *total)
    names = ("qk", "dp", "p", "dqk", "gq", "gk", "gv")
    for name, got, want in zip(names, stage1 + stage12 + total, reference(*args, SCALE)):
        s.assert_close(name, got, want, TOL[name])
        s.check_untouched(got)
    # The same gradients from torch autograd of softmax(q k^T · scale) v (float64).
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    out = torch.softmax(leaves[0] @ leaves[1].transpose(1, 2) * SCALE, -1) @ leaves[2]
    out.backward(grad.double())
    for name, got, leaf in zip(("gq", "gk", "gv"), total, leaves):
        s.assert_close(f"{name} (autograd)", got, leaf.grad.numpy(), TOL["autograd"])


def test_rejects_statistics_of_another_shape():
    args = list(inputs((1, 1, 8, 12, 16), "float16"))
    args[6] = torch.ones((1, 9))
    with pytest.raises(ValueError, match=r"qksum: expected float32 \[1, 8\]"):
        attn_backward_dense(*args)
    args = inputs((1, 1, 8, 12, 16), "float16")
    with pytest.raises(TypeError, match="grad: expected torch.float16 like q"):
        attn_backward_dense(*args[:4], args[4].float(), *args[5:])
