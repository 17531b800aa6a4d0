"""The tile-language ("tl") implementations of the operators, picked by implementation_index,
against torch. (Every parametrised operator test of test_ops.py / test_gemm.py also runs them;
this file checks that they are registered under their name and index.)"""

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_close, make
from tileops import ops

TL_OPS = ["add", "mul", "rms_norm", "add_rms_norm", "silu_and_mul", "swiglu", "scaled_softmax",
          "causal_softmax", "flash_attention", "paged_attention"]


@pytest.mark.parametrize("op", TL_OPS)
def test_tl_is_implementation_1(op):
    names = ops.active_implementation_names(op, device="cpu")
    assert ops.active_implementation_indices(op, device="cpu")[:2] == [0, 1]
    assert names[:2] == ["native", "tl"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_tl_silu_and_mul_and_softmax_match_torch(dtype):
    x = make([5, 2 * 37], dtype, "strided", seed=3)
    got = ops.silu_and_mul(x, implementation_index=1)
    assert_close(got, F.silu(x[..., :37].float()) * x[..., 37:].float(), dtype)
    y = make([3, 7, 130], dtype, seed=4)
    got = ops.scaled_softmax(y, 0.5, implementation_index=1)
    assert_close(got, torch.softmax(y.float() * 0.5, dim=-1), dtype)


def test_tl_gemm_is_implementation_2():
    assert ops.active_implementation_names("gemm", device="cpu")[-1] == "tl"
    assert ops.active_implementation_indices("gemm", device="cpu")[-1] == 2
    a = make([33, 70], torch.float32, seed=1)
    b = make([70, 41], torch.float32, "strided", seed=2)
    got = ops.matmul(a, b, implementation_index=2)
    assert_close(got, a.double() @ b.double(), torch.float32)
