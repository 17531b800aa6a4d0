"""exp_plus2_unaligned against float64 exp(x) + 2 on unaligned widths, strides and row tails."""

import pytest
import torch

from catalog import _support as s
from catalog.formats.exp_plus2_unaligned.kernel import exp_plus2_unaligned, reference

ENTRY = s.load_entry(__file__)
TOLS = ENTRY["validated"]["tolerances"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_exp_plus2_unaligned(case):
    backend, (r, c), dtype = case
    x = s.strided((r, c), s.dtype_of(dtype), seed=r + c, scale=2.0)  # exp stays below 65504
    y = s.poisoned((r, c), s.dtype_of(dtype))
    with s.on_backend(backend):
        exp_plus2_unaligned(x, out=y)
    s.assert_close("y", y, reference(x), TOLS["y_float16" if dtype == "float16" else "y"])
    s.check_untouched(y)


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="x: expected float32 or float16"):
        exp_plus2_unaligned(torch.zeros((2, 3), dtype=torch.int32))
    with pytest.raises(ValueError, match="out: expected"):
        exp_plus2_unaligned(torch.zeros((2, 3)), out=torch.zeros((3, 2)))
