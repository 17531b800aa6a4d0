"""tileops.infini, InfiniOps' Python surface as a whole: every operator called once through its
function and class form, streams and implementation indices. The forms of each operator are
tested in test_infini_dense.py, test_infini_kv.py and test_infini_attention.py."""

import numpy as np
import pytest
import torch

from conftest import make
from test_attention import cu, paged
from test_infini_attention import varlen_args
from test_infini_kv import D, H, HKV, T, positions, pre_gathered_cache
from test_kv_ops import cos_sin_cache
from tileops import infini
from tileops import ops

NAN = float("nan")


# ---- the surface: every operator, its class, streams ---------------------------------------------

# Every operator with one valid call: name -> (function building fresh arguments, outputs).
def _cases():
    f32 = torch.float32

    def elementwise():
        return (make((3, 8), f32), make((3, 8), f32, seed=1), torch.empty(3, 8)), 2

    def attention():
        q = make((5, 2, 64), f32)
        return (q, make((5, 2, 64), f32, seed=1), make((5, 2, 64), f32, seed=2), cu([5]),
                cu([5]), None, 2, 2, 64, 0.125, True, -1, -1, 0, torch.empty(5, 2, 64)), 14

    def paged_decode():
        kc, table = paged(make((9, 2, 64), f32, seed=1), [9], 4)
        return (make((1, 2, 64), f32), kc, kc.clone(), torch.tensor([9], dtype=torch.int32), table,
                2, 2, 64, 0.125, 4, torch.empty(1, 2, 64)), 10

    def kv_write():
        kv = torch.zeros(2, 3, 4, HKV, D)
        return (make((2, HKV, D), f32), make((2, HKV, D), f32, seed=1), kv, torch.tensor([0, 5]),
                kv), 4

    def rotary():
        return (positions(), make((T, H * D), f32), make((T, HKV * D), f32, seed=1), D,
                cos_sin_cache(D), True, D, torch.empty(T, H * D), torch.empty(T, HKV * D)), 7

    def apply_rotary():
        table = pre_gathered_cache(cos_sin_cache(D), positions(), True)
        return (make((T, H, D), f32), make((T, HKV, D), f32, seed=1), table[:T], table[T:], D,
                True, torch.empty(T, H, D), torch.empty(T, HKV, D)), 6

    def varlen():
        q = make((5, 2, 64), f32)
        return varlen_args(q, make((5, 2, 64), f32, seed=1), make((5, 2, 64), f32, seed=2),
                           torch.empty(5, 2, 64), [5], [5]), 3

    def kvcache():
        kc, table = paged(make((9, 2, 64), f32, seed=1), [9], 4)
        return (make((1, 1, 2, 64), f32), kc, kc.clone(), None, None,
                torch.tensor([9], dtype=torch.int32), None, None, None, None, table, None,
                torch.empty(1, 1, 2, 64), 0.125, True, -1, 0, 0.0, False, 0), 12

    return {
        "add": elementwise, "mul": elementwise, "swiglu": elementwise,
        "cast": lambda: ((make((3, 8), f32), torch.empty(3, 8, dtype=torch.float16)), 1),
        "cat": lambda: ((make((2, 3), f32), [make((2, 3), f32, seed=1)], 0, torch.empty(4, 3)), 3),
        "matmul": lambda: ((make((3, 4), f32), make((4, 5), f32), torch.empty(3, 5), False, False),
                           2),
        "gemm": lambda: ((make((3, 4), f32), make((4, 5), f32), 1.0, 0.0, False, False,
                          torch.empty(3, 5)), 6),
        "linear": lambda: ((make((3, 4), f32), make((4, 5), f32), make((5,), f32), False, False,
                            torch.empty(3, 5)), 5),
        "rms_norm": lambda: ((make((3, 8), f32), make((8,), f32), 1e-6, torch.empty(3, 8)), 3),
        "add_rms_norm": lambda: ((make((3, 8), f32), make((3, 8), f32, seed=1), make((8,), f32),
                                  1e-6, torch.empty(3, 8), torch.empty(3, 8)), (4, 5)),
        "silu_and_mul": lambda: ((make((3, 8), f32), -1, torch.empty(3, 4)), 2),
        "causal_softmax": lambda: ((make((3, 8), f32), torch.empty(3, 8)), 1),
        "scaled_softmax": lambda: ((make((3, 8), f32), 0.5, torch.empty(3, 8)), 2),
        "embedding": lambda: ((torch.tensor([1, 0, 2]), make((3, 8), f32), torch.empty(3, 8)), 2),
        "rotary_embedding": rotary,
        "apply_rotary_pos_emb": apply_rotary,
        "reshape_and_cache": kv_write,
        "flash_attention": attention,
        "paged_attention": paged_decode,
        "mha_varlen_fwd": varlen,
        "mha_fwd_kvcache": kvcache,
        "top_k_top_p_sampler": lambda: ((make((2, 9), f32), None, 0.9,
                                         torch.empty(2, dtype=torch.int64)), 3),
        "topk_topp_sampling": lambda: ((torch.softmax(make((2, 9), f32), -1), 3, 0.9,
                                        torch.empty(2, dtype=torch.int32)), 3),
    }


CASES = _cases()
CLASSES = {name: cls for name, cls in zip(infini.__all__[::2], infini.__all__[1::2])}


def test_every_operator_has_a_case_and_a_class():
    seed_list = ["add", "mul", "cast", "cat", "matmul", "gemm", "linear", "rms_norm",
                 "add_rms_norm", "swiglu", "silu_and_mul", "causal_softmax", "rotary_embedding",
                 "apply_rotary_pos_emb", "reshape_and_cache", "flash_attention",
                 "paged_attention", "topk_topp_sampling", "top_k_top_p_sampler"]
    assert set(seed_list) <= set(CASES)
    assert set(CASES) == set(CLASSES)
    for name, cls in CLASSES.items():
        assert callable(getattr(infini, name)) and isinstance(getattr(infini, cls), type)


# Outputs written only in part (the cache rows of the slots): not poisoned.
PARTIAL_OUTPUTS = {"reshape_and_cache"}


def run_case(name, call):
    """Runs a fresh case through `call`; returns its outputs (cloned)."""
    torch.manual_seed(0)
    args, outs = CASES[name]()
    for i in (outs if isinstance(outs, tuple) else (outs,)):
        if args[i].dtype.is_floating_point and name not in PARTIAL_OUTPUTS:
            args[i].fill_(NAN)
    result = call(args)
    assert result is None
    return [args[i].clone() for i in (outs if isinstance(outs, tuple) else (outs,))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_streams_and_class_form(name):
    function, cls = getattr(infini, name), getattr(infini, CLASSES[name])
    ref = run_case(name, lambda a: function(*a, stream=0))
    assert not any(torch.isnan(r.double()).any() for r in ref)
    for got in [run_case(name, lambda a: function(*a)),
                run_case(name, lambda a: function(*a, stream=None, implementation_index=0)),
                run_case(name, lambda a: cls(*a)(*a)),
                run_case(name, lambda a: cls(*a, implementation_index=0)(*a, stream=0))]:
        assert all(torch.equal(g, r) for g, r in zip(got, ref))
    with pytest.raises(ValueError, match="stream"):
        run_case(name, lambda a: function(*a, stream=7))
    with pytest.raises(ValueError, match="stream"):
        run_case(name, lambda a: cls(*a)(*a, stream=7))
    with pytest.raises(TypeError):
        cls()
    with pytest.raises(NotImplementedError, match="index 99"):
        run_case(name, lambda a: function(*a, implementation_index=99))


@pytest.mark.parametrize("name", sorted(CASES))
def test_class_methods(name):
    cls = getattr(infini, CLASSES[name])
    tileops_op = {"mha_varlen_fwd": "flash_attention",
                  "mha_fwd_kvcache": "flash_attention"}.get(name, name)
    expected = ops.active_implementation_indices(tileops_op, "cpu")
    assert cls.active_implementation_indices("cpu") == expected and expected[0] == 0
    assert cls.active_implementation_indices(torch.device("cpu")) == expected
    assert cls.active_implementation_indices("cuda") == ops.active_implementation_indices(
        tileops_op, "cuda")
    assert cls.active_implementation_indices("npu") == []
    assert cls.active_implementation_indices("ascend") == []
    with pytest.raises(ValueError, match="device"):
        cls.active_implementation_indices("tpu")
    run_case(name, lambda a: getattr(infini, name)(*a))
    assert ops.cache_size() > 0 or name in ("cat", "cast")
    cls.clear_cache()
    assert ops.cache_size() == 0


def test_numpy_arrays():
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
    out = np.full((2, 3), np.nan, np.float32)
    infini.add(x, y, out)
    assert np.array_equal(out, x + y)
    a, b = np.ones((2, 4), np.float32), np.ones((3, 2, 4), np.float32)
    bias, res = np.arange(2, dtype=np.float32), np.full((3, 2, 2), np.nan, np.float32)
    infini.linear(a, b, bias, False, True, res)  # batched weights as views of numpy arrays
    assert np.array_equal(res, np.broadcast_to(4 + bias, (3, 2, 2)))
