"""Bad inputs raise the mapped exception with a message naming operator and argument."""

import numpy as np
import pytest
import torch

from tileops import ops

X = torch.ones(4, 8)
W = torch.ones(8)
IDS = torch.tensor([0, 1])

# operator -> (call, exception, message fragment); at least two per operator.
CASES = [
    ("add-shape", lambda: ops.add(X, torch.ones(3)), ValueError, "add: argument 'other'"),
    ("add-dtype", lambda: ops.add(X, X.double()), TypeError, "add"),
    ("mul-out", lambda: ops.mul(X, X, torch.ones(2, 8)), ValueError, "mul: argument 'out'"),
    ("mul-dtype", lambda: ops.mul(X.bool(), X.bool()), TypeError, "mul"),
    ("cast-no-dtype", lambda: ops.cast(X), TypeError, "cast: argument 'dtype'"),
    ("cast-shape", lambda: ops.cast(X, torch.empty(3, 8)), ValueError, "cast"),
    ("cast-bad-name", lambda: ops.cast(X, dtype="float7"), TypeError, "float7"),
    ("cat-empty", lambda: ops.cat([]), ValueError, "cat: argument 'tensors'"),
    ("cat-dim", lambda: ops.cat([X, X], dim=5), ValueError, "cat: argument 'dim'"),
    ("cat-type", lambda: ops.cat(X), TypeError, "cat: argument 'tensors'"),
    ("embedding-range", lambda: ops.embedding(torch.tensor([9]), X), ValueError, "embedding"),
    ("embedding-ids", lambda: ops.embedding(X, X), TypeError, "embedding"),
    ("rms_norm-weight", lambda: ops.rms_norm(X, torch.ones(7)), ValueError, "weight"),
    ("rms_norm-dtype", lambda: ops.rms_norm(X.int(), W.int()), TypeError, "rms_norm"),
    ("add_rms_norm-shape", lambda: ops.add_rms_norm(X, torch.ones(4, 7), W), ValueError,
     "add_rms_norm"),
    ("add_rms_norm-readonly",
     lambda: ops.add_rms_norm(np.broadcast_to(np.ones(8, np.float32), (4, 8)),
                              np.ones((4, 8), np.float32), np.ones(8, np.float32)),
     ValueError, "read-only"),
    ("swiglu-shape", lambda: ops.swiglu(X, torch.ones(4, 7)), ValueError, "swiglu"),
    ("swiglu-dtype", lambda: ops.swiglu(X.long(), X.long()), TypeError, "swiglu"),
    ("silu_and_mul-odd", lambda: ops.silu_and_mul(torch.ones(4, 7)), ValueError, "even"),
    ("silu_and_mul-dim", lambda: ops.silu_and_mul(X, dim=3), ValueError, "dim"),
    ("causal_softmax-rank", lambda: ops.causal_softmax(W), ValueError, "causal_softmax"),
    ("causal_softmax-t<s", lambda: ops.causal_softmax(torch.ones(8, 4)), ValueError,
     "causal_softmax"),
    ("scaled_softmax-out", lambda: ops.scaled_softmax(X, 1.0, torch.ones(4, 7)), ValueError,
     "scaled_softmax"),
    ("scaled_softmax-dtype", lambda: ops.scaled_softmax(X.int(), 1.0), TypeError,
     "scaled_softmax"),
    ("stream", lambda: ops.add(X, X, stream=0), ValueError, "stream"),
    ("index", lambda: ops.add(X, X, implementation_index=99), NotImplementedError, "add"),
    ("negative-stride", lambda: ops.add(np.ones(4)[::-1], np.ones(4)), ValueError, "stride"),
    ("byte-stride",
     lambda: ops.add(np.ndarray((2,), np.float32, np.zeros(16, np.uint8), 0, (6,)),
                     np.ones(2, np.float32)),
     ValueError, "itemsize"),
    ("complex", lambda: ops.add(torch.ones(2, dtype=torch.complex64), X), TypeError, "dtype"),
    ("big-endian", lambda: ops.add(np.ones(2, ">f4"), np.ones(2, ">f4")), TypeError, "byte"),
    ("device", lambda: ops.add(torch.ones(2, device="meta"), torch.ones(2)), ValueError, "CPU"),
]


@pytest.mark.parametrize("name,call,exc,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_inputs(name, call, exc, fragment):
    with pytest.raises(exc, match=fragment):
        call()


BAD = [None, 3, "x", object(), [1.0, 2.0]]
OPS = [
    lambda t: ops.add(t, X), lambda t: ops.mul(X, t), lambda t: ops.cast(t, dtype="float16"),
    lambda t: ops.cat([X, t]), lambda t: ops.embedding(t, X), lambda t: ops.rms_norm(X, t),
    lambda t: ops.add_rms_norm(X.clone(), t, W), lambda t: ops.swiglu(t, X),
    lambda t: ops.silu_and_mul(t), lambda t: ops.causal_softmax(t),
    lambda t: ops.scaled_softmax(t, 1.0), lambda t: ops.rms_norm(X, W, out=t),
]


@pytest.mark.parametrize("bad", BAD + [torch.ones(0, 8), torch.ones(8, 8)[:, ::3],
                                        torch.ones(8, 16).t()], ids=repr)
@pytest.mark.parametrize("op", range(len(OPS)))
def test_no_segfault(op, bad):
    try:
        OPS[op](bad)
    except (ValueError, TypeError, NotImplementedError):
        pass


def test_partially_overlapping_output_is_rejected_untouched():
    base = torch.arange(300, dtype=torch.float32)
    x, out = base[:256].view(4, 64), base[1:257].view(4, 64)
    before = base.clone()
    with pytest.raises(ValueError, match="'out'.*overlapping"):
        ops.scaled_softmax(x, 1.0, out)
    with pytest.raises(ValueError, match="'out'.*'input'"):
        ops.add(x, x, out)
    assert torch.equal(base, before)
    ops.add(x, x, x)  # exactly in place is allowed
    assert torch.equal(x, 2 * before[:256].view(4, 64))
