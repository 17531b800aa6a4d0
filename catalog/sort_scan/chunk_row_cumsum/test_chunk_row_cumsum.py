"""chunk_row_cumsum against a float64 cumsum per chunk, with strided inputs and row/column tails."""

import pytest
import torch

from catalog import _support as s
from catalog.sort_scan.chunk_row_cumsum.kernel import chunk_row_cumsum, reference

ENTRY = s.load_entry(__file__)
TOLS = ENTRY["validated"]["tolerances"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_chunk_row_cumsum(case):
    backend, (m, h, chunk), dtype = case
    x = s.strided((m, h), s.dtype_of(dtype), seed=m + h)
    y = s.poisoned((m, h), s.dtype_of(dtype))
    with s.on_backend(backend):
        chunk_row_cumsum(x, chunk, out=y)
    s.assert_close("y", y, reference(x, chunk), TOLS["y_float16" if dtype == "float16" else "y"])
    s.check_untouched(y)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 3))
    with pytest.raises(ValueError, match="chunk: expected an int >= 1"):
        chunk_row_cumsum(x, 0)
    with pytest.raises(TypeError, match="x: expected float32 or float16"):
        chunk_row_cumsum(x.double(), 2)
    with pytest.raises(ValueError, match="out: expected"):
        chunk_row_cumsum(x, 2, out=torch.zeros((4, 4)))
