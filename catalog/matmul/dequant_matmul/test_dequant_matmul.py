"""dequant_matmul against float64 x @ W^T, W decoded from tileops.ops.quantize_weight's buffer by
an independent numpy parser of the documented layout, over the entry's validated formats and
shapes (M, N, K tails; N not a multiple of 4; per-channel K not a multiple of 32)."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.dequant_matmul.kernel import dequant_matmul, dequantize_reference, reference
from tileops import ops

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]


def _weight(n, k, bits, group, symmetric, seed=3):
    w = s.strided((n, k), torch.float32, seed=seed)
    w[1] = 0  # an all-zero row: scale 0 in every group
    q = ops.quantize_weight(w.contiguous(), bits=bits, group_size=group,
                            symmetric=bool(symmetric))
    return w, q


@pytest.mark.parametrize("fmt", [(8, 0, 1), (8, 64, 1), (4, 32, 1), (4, 128, 0)])
def test_reference_parser_reconstructs_the_weight(fmt):
    # The parser agrees with quantize_weight's meaning: W is w up to the quantisation error.
    w, q = _weight(9, 256, *fmt)
    got = dequantize_reference(q)
    rel = np.linalg.norm(got - s.f64(w)) / np.linalg.norm(s.f64(w))
    assert rel < (0.01 if fmt[0] == 8 else 0.15), rel
    assert not got[1].any()


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_dequant_matmul(case):
    backend, (m, n, k, bits, group, symmetric), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1, scale=k**-0.5)  # O(1) z at any K
    _, q = _weight(n, k, bits, group, symmetric)
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        dequant_matmul(x, q, out)
    s.assert_close("out", out, reference(x, q), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    _, q = _weight(8, 64, 4, 32, 1)
    x = torch.zeros((2, 64))
    with pytest.raises(ValueError, match=r"qweight: the header implies"):
        dequant_matmul(x, q[:-4].clone())
    with pytest.raises(ValueError, match="qweight: not a version-2"):
        dequant_matmul(x, torch.zeros_like(q))
    with pytest.raises(ValueError, match="qweight: expected the contiguous 1-D"):
        dequant_matmul(x, q.view(torch.int8))
    with pytest.raises(ValueError, match=r"x: expected \[M, 64\]"):
        dequant_matmul(torch.zeros((2, 32)), q)
    with pytest.raises(TypeError, match="x: expected float32 or bfloat16"):
        dequant_matmul(x.half(), q)
