"""gemm, matmul and linear against torch 1.13 (float64 references of the same rounded inputs):
dtype x implementation index x layout, decode and prefill rows, transposes, broadcast batches,
alpha/beta, bias, packed weights, class forms and errors."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import TOLERANCE, make, params
from tileops import ops


def assert_gemm_close(got, ref, dtype, k):
    """The dtype's tolerance plus float32 accumulation over k products (~k * 2^-22)."""
    tol = TOLERANCE[dtype]
    got = torch.as_tensor(got).double()
    err = (got - ref.double()).abs()
    bound = tol + 4e-7 * k + tol * ref.double().abs()
    assert got.shape == ref.shape
    assert bool((err <= bound).all()), f"max error {err.max().item()}"


@params("gemm")
def test_gemm(dtype, index, layout):
    a, b = make((9, 70), dtype, layout), make((70, 33), dtype, layout, seed=1)
    c = make((9, 33), dtype, seed=2)
    ref = 0.5 * (a.double() @ b.double()) + 2.0 * c.double()
    got = ops.gemm(a, b, alpha=0.5, beta=2.0, c=c, implementation_index=index)
    assert got is c
    assert_gemm_close(got, ref, dtype, 70)


@params("gemm")
def test_gemm_transposed_and_batched(dtype, index, layout):
    a, b = make((3, 40, 6), dtype, layout), make((3, 21, 40), dtype, layout, seed=1)
    got = ops.gemm(a, b, trans_a=True, trans_b=True, implementation_index=index)
    ref = a.double().transpose(1, 2) @ b.double().transpose(1, 2)
    assert_gemm_close(got, ref, dtype, 40)


@params("matmul")
def test_matmul_broadcasts(dtype, index, layout):
    a, b = make((2, 1, 5, 19), dtype, layout), make((3, 19, 8), dtype, layout, seed=1)
    got = ops.matmul(a, b, implementation_index=index)
    assert got.shape == (2, 3, 5, 8) and got.dtype == dtype
    assert_gemm_close(got, torch.matmul(a.double(), b.double()), dtype, 19)


@params("linear")
def test_linear(dtype, index, layout):
    for rows in (1, 3, 16, 40):
        x, w = make((rows, 131), dtype, layout), make((37, 131), dtype, layout, seed=1)
        bias = make((37,), dtype, seed=2)
        got = ops.linear(x, w, bias, implementation_index=index)
        assert_gemm_close(got, F.linear(x.double(), w.double(), bias.double()), dtype, 131)
    x3 = make((2, 4, 24), dtype, layout)
    w = make((10, 24), dtype, seed=3)
    out = torch.empty((2, 4, 10), dtype=dtype)
    assert ops.linear(x3, w, out=out, implementation_index=index) is out
    assert_gemm_close(out, F.linear(x3.double(), w.double()), dtype, 24)


@params("linear_packed")
def test_linear_packed_weight(dtype, index, layout):
    for rows, n, k in ((1, 37, 131), (3, 16, 257), (16, 45, 600), (40, 33, 70)):
        x, w = make((rows, k), dtype, layout), make((n, k), dtype, layout, seed=1)
        bias = make((n,), dtype, seed=2)
        packed = ops.pack_linear_weight(w)
        assert (packed.n, packed.k) == (n, k)
        assert packed.data.shape == (ops.packed_linear_weight_numel(n, k, dtype),)
        ref = F.linear(x.double(), w.double(), bias.double())
        assert_gemm_close(ops.linear(x, packed, bias, implementation_index=index), ref, dtype, k)
        assert_gemm_close(ops.linear_packed(x, packed, bias), ref, dtype, k)
    x3, w = make((2, 4, 24), dtype, layout), make((10, 24), dtype, seed=3)
    buffer = torch.full((ops.packed_linear_weight_numel(10, 24, dtype),), float("nan"), dtype=dtype)
    packed = ops.pack_linear_weight(w, out=buffer)
    assert packed.data is buffer
    out = torch.full((2, 4, 10), float("nan"), dtype=dtype)
    assert ops.LinearPacked(x3, packed)(x3, packed, out=out) is out
    assert_gemm_close(out, F.linear(x3.double(), w.double()), dtype, 24)


def test_linear_packed_weight_numpy_and_errors():
    x, w = make((3, 20), torch.float32).numpy(), make((7, 20), torch.float32, seed=1).numpy()
    packed = ops.pack_linear_weight(w)
    assert isinstance(packed.data, np.ndarray)
    got = ops.linear(x, packed)
    assert isinstance(got, np.ndarray)
    assert_gemm_close(torch.from_numpy(got), torch.from_numpy(x).double() @
                      torch.from_numpy(w).double().T, torch.float32, 20)
    with pytest.raises(ValueError, match="'input'"):
        ops.linear(np.ones((3, 21), np.float32), packed)
    with pytest.raises(TypeError, match="'packed'"):
        ops.linear(np.ones((3, 20), np.float64).astype(np.float16), packed)
    with pytest.raises(ValueError, match="'weight'"):
        ops.pack_linear_weight(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="'packed'"):
        ops.pack_linear_weight(w, out=np.ones(5, np.float32))
    with pytest.raises(TypeError):
        ops.linear_packed(x, w)


def test_class_forms_run_new_data():
    x, w = make((4, 30), torch.float32), make((12, 30), torch.float32, seed=1)
    lin = ops.Linear(x, w)
    for seed in range(3):
        x2, w2 = make((4, 30), torch.float32, seed=seed + 5), make((12, 30), torch.float32, seed=seed)
        assert_gemm_close(lin(x2, w2), F.linear(x2.double(), w2.double()), torch.float32, 30)
    a, b = make((6, 8), torch.float32), make((8, 5), torch.float32, seed=1)
    mm = ops.Matmul(a, b)
    assert_gemm_close(mm(a, b), a.double() @ b.double(), torch.float32, 8)
    gm = ops.Gemm(a, b, alpha=3.0)
    assert_gemm_close(gm(a, b), 3.0 * (a.double() @ b.double()), torch.float32, 8)
    with pytest.raises(ValueError):
        lin(make((5, 30), torch.float32), w)


def test_errors_name_the_argument():
    a, b = torch.ones(4, 8), torch.ones(7, 5)
    with pytest.raises(ValueError, match="'b'"):
        ops.matmul(a, b)
    with pytest.raises(TypeError, match="'b'"):
        ops.gemm(a, torch.ones(8, 5, dtype=torch.float16))
    with pytest.raises(ValueError, match="'weight'"):
        ops.linear(a, torch.ones(5, 7))
    with pytest.raises(ValueError, match="'bias'"):
        ops.linear(a, torch.ones(5, 8), torch.ones(6))
    with pytest.raises(ValueError, match="'c'"):
        ops.gemm(a, torch.ones(8, 5), beta=1.0)
    assert ops.active_implementation_names("linear", device="cpu")[0] == "native"


def test_linear_packing_pays():
    for dtype in (torch.float32, torch.float16, "float32", np.float16):
        assert ops.linear_packing_pays(dtype) is True
    assert isinstance(ops.linear_packing_pays(torch.bfloat16), bool)
    # Without AMX packing pays for bfloat16 too (linear has no in-place tile products then).
    code = "import torch; from tileops import ops; print(ops.linear_packing_pays(torch.bfloat16))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "TILEOPS_AMX": "0"}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    with pytest.raises(ValueError, match="'dtype'"):
        ops.linear_packing_pays(torch.int8)
