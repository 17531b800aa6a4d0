"""matmul_chunk_absmax_norm128 against float64 z / absmax per 128-column chunk over the entry's
validated shapes (a short last chunk; an all-zero chunk that must come out 0)."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_chunk_absmax_norm128.kernel import (CHUNK,
                                                               matmul_chunk_absmax_norm128,
                                                               reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_chunk_absmax_norm128(case):
    backend, (m, n, k), dtype = case
    x = s.strided((m, k), s.dtype_of(dtype), seed=1)
    y = s.strided((n, k), s.dtype_of(dtype), seed=2)
    y[:min(n, CHUNK) // 2] = 0  # zero columns inside chunk 0
    x[1] = 0  # every chunk of row 1 is all zero: defined as 0
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_chunk_absmax_norm128(x, y, out)
    want = reference(x, y)
    s.assert_close("z", out, want, TOL)
    s.check_untouched(out)
    assert bool((out[1] == 0).all())
    # Every chunk row that is not all zero reaches |1| exactly once or more.
    got = s.f64(out)
    for c in range(0, n, CHUNK):
        peaks = np.abs(got[:, c:c + CHUNK]).max(1)
        np.testing.assert_allclose(np.delete(peaks, 1), 1.0, rtol=1e-6)


def test_rejects_bad_arguments():
    x = torch.zeros((4, 8))
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        matmul_chunk_absmax_norm128(x, torch.zeros((4, 7)))
    with pytest.raises(ValueError, match="out: expected float32"):
        matmul_chunk_absmax_norm128(x, x, out=torch.zeros((4, 5)))
