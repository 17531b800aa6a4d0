"""vLLM's activations (tileops.ops and tileops.vllm's out-first forms) against vLLM's
forward_native formulas in torch, float64: every dtype, strided views, tails, poisoned outputs."""

import math

import pytest
import torch
import torch.nn.functional as F

from conftest import FLOATS, LAYOUTS, TOLERANCE, assert_close, make
from tileops import ops
from tileops import vllm


def _gelu_new(x):
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * torch.pow(x, 3.0))))


def _gelu_fast(x):
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def _halves(fn):
    def ref(x, threshold=None):
        d = x.shape[-1] // 2
        return fn(x[..., :d], x[..., d:]) if threshold is None else fn(x[..., :d], x[..., d:],
                                                                       threshold)
    return ref


# name -> (reference on float64, gated)
REFERENCES = {
    "gelu_and_mul": (_halves(lambda a, b: F.gelu(a) * b), True),
    "gelu_tanh_and_mul": (_halves(lambda a, b: F.gelu(a, approximate="tanh") * b), True),
    "fatrelu_and_mul": (_halves(lambda a, b, t: F.threshold(a, t, 0.0) * b), True),
    "mul_and_silu": (_halves(lambda a, b: a * F.silu(b)), True),
    "gelu_new": (_gelu_new, False),
    "gelu_fast": (_gelu_fast, False),
    "gelu_quick": (lambda x: x * torch.sigmoid(1.702 * x), False),
}
# Tighter than conftest's float32 1e-5: float32 math rounded a few times.
TOL32 = 4e-6


def _check(name, got, x, threshold, dtype):
    ref_fn, _ = REFERENCES[name]
    args = (x.double(),) if name != "fatrelu_and_mul" else (x.double(), threshold)
    ref = ref_fn(*args)
    if dtype == torch.float32:
        err = (got.double() - ref).abs()
        assert bool((err <= TOL32 + TOL32 * ref.abs()).all()), f"max error {err.max().item()}"
    else:
        assert_close(got, ref, dtype)


def _run(name, x, out=None, threshold=0.3, **kw):
    fn = getattr(ops, name)
    if name == "fatrelu_and_mul":
        return fn(x, threshold, out=out, **kw) if out is not None else fn(x, threshold, **kw)
    return fn(x, out=out, **kw) if out is not None else fn(x, **kw)


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cols", [2, 14, 66, 8194])
def test_matches_torch(name, dtype, layout, cols):
    x = make((3, 5, cols), dtype, layout, low=-8.0, high=8.0)
    gated = REFERENCES[name][1]
    shape = (3, 5, cols // 2) if gated else (3, 5, cols)
    for index in ops.active_implementation_indices(name, device="cpu"):
        out = torch.full(shape, float("nan"), dtype=dtype)  # poisoned
        got = _run(name, x, out, implementation_index=index)
        assert got is out
        _check(name, out, x, 0.3, dtype)
        allocated = _run(name, x, implementation_index=index)
        assert allocated.shape == shape and allocated.dtype == dtype
        _check(name, allocated, x, 0.3, dtype)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_strided_out_and_transposed_input(name):
    base = make((9, 40), torch.float32, low=-8.0, high=8.0)
    x = base.t()  # [40, 9] with strides (1, 40)
    x = x[:, :8]
    gated = REFERENCES[name][1]
    wide = torch.full((40, 16), float("nan"))
    out = wide[:, ::4] if gated else wide[:, ::2]
    _run(name, x, out)
    _check(name, out, x, 0.3, torch.float32)
    assert torch.isnan(wide[:, 1]).all()  # the gaps stay poisoned


@pytest.mark.parametrize("name", sorted(n for n, (_, g) in REFERENCES.items() if g))
def test_gated_dim(name):
    x = make((4, 6, 5), torch.float32, low=-8.0, high=8.0)
    threshold = (0.3,) if name == "fatrelu_and_mul" else ()
    got = getattr(ops, name)(x, *threshold, dim=0)
    moved = getattr(ops, name)(x.movedim(0, -1).contiguous(), *threshold).movedim(-1, 0)
    torch.testing.assert_close(got, moved, rtol=0, atol=0)
    with pytest.raises(ValueError, match="dim"):
        getattr(ops, name)(x, *threshold, dim=3)
    with pytest.raises(ValueError, match="input"):
        getattr(ops, name)(x, *threshold)  # an odd last extent
    with pytest.raises(ValueError, match="out"):
        getattr(ops, name)(x, *threshold, dim=0, out=torch.empty(4, 6, 5))
    with pytest.raises(TypeError, match="input"):
        getattr(ops, name)(torch.ones(4, 6, dtype=torch.int32), *threshold)


def test_fatrelu_threshold():
    x = torch.tensor([[-2.0, -0.5, 0.0, 0.5, 1.0, float("nan"), 3, 3, 3, 3, 3, 3]])
    for threshold in (-1.0, 0.0, 0.5, 2.0):
        got = ops.fatrelu_and_mul(x, threshold)
        ref = F.threshold(x[:, :6], threshold, 0.0) * x[:, 6:]
        torch.testing.assert_close(got, ref, equal_nan=True)
    for bad in (float("nan"), float("inf"), 1e39):
        with pytest.raises(ValueError, match="threshold"):
            ops.fatrelu_and_mul(x, bad)


@pytest.mark.parametrize("name", ["gelu_new", "gelu_fast", "gelu_quick"])
def test_elementwise_in_place_and_overlap(name):
    x = make((4, 33), torch.bfloat16, "strided", low=-8.0, high=8.0)
    before = x.clone()
    getattr(ops, name)(x, out=x)
    _check(name, x, before, None, torch.bfloat16)
    buf = torch.zeros(5, 33)
    with pytest.raises(ValueError, match="out"):
        getattr(ops, name)(buf[:4], out=buf[1:])


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_class_form(name):
    gated = REFERENCES[name][1]
    x = make((2, 16), torch.float16, "strided", low=-8.0, high=8.0)
    out = torch.full((2, 8) if gated else (2, 16), float("nan"), dtype=torch.float16)
    cls = getattr(ops, "".join(p.capitalize() for p in name.split("_")))
    op = cls(x, 0.3, out=out) if name == "fatrelu_and_mul" else cls(x, out=out)
    for seed in range(2):
        y = make((2, 16), torch.float16, "strided", low=-8.0, high=8.0, seed=seed + 5)
        op(y, out)
        _check(name, out, y, 0.3, torch.float16)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_vllm_out_first_form(name):
    gated = REFERENCES[name][1]
    x = make((3, 20), torch.bfloat16, low=-8.0, high=8.0)
    out = torch.full((3, 10) if gated else (3, 20), float("nan"), dtype=torch.bfloat16)
    if name == "fatrelu_and_mul":
        assert vllm.fatrelu_and_mul(out, x, threshold=0.3) is None
    else:
        assert getattr(vllm, name)(out, x) is None
    _check(name, out, x, 0.3, torch.bfloat16)
    # Swapped arguments (tileops' order) are refused, not silently computed.
    if gated:
        with pytest.raises(ValueError):
            getattr(vllm, name)(x, out)


def test_vllm_silu_and_mul():
    x = make((3, 20), torch.float32, low=-8.0, high=8.0)
    out = torch.full((3, 10), float("nan"))
    vllm.silu_and_mul(out, x)
    torch.testing.assert_close(out, F.silu(x[:, :10]) * x[:, 10:])
