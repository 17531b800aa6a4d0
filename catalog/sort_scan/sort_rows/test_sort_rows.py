"""sort_rows against a float64 stable argsort, with ties, NaN, +-inf and +-0 in the rows."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.sort_scan.sort_rows.kernel import reference, sort_rows

ENTRY = s.load_entry(__file__)


def _rows(r, c, seed):
    """Normal values at every scale (all radix digits vary), repeats (ties) and specials."""
    x = s.strided((r, c), torch.float32, seed)
    gen = torch.Generator().manual_seed(seed)
    x.mul_(torch.exp2(torch.randint(-30, 30, (r, c), generator=gen).float()))
    x[:, ::5] = torch.round(x[:, ::5] / 1e9) * 3.0  # many exact zeros and repeated values
    special = [math.nan, math.inf, -math.inf, -0.0, 0.0, math.nan]
    x[0, :min(c, 6)] = torch.tensor(special[:min(c, 6)])
    return x


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_sort_rows(case):
    backend, (r, c), _ = case
    x = _rows(r, c, seed=r + c)
    values = s.poisoned((r, c))
    indices = torch.full((r, c + 3), -7, dtype=torch.int32)[:, :c]
    with s.on_backend(backend):
        sort_rows(x, values, indices)
    want_v, want_i = reference(x)
    np.testing.assert_array_equal(values.numpy(), want_v.astype(np.float32))
    np.testing.assert_array_equal(indices.numpy(), want_i)
    s.check_untouched(values)
    assert (indices._base[:, c:] == -7).all(), "the kernel wrote past the indices' rows"
    # torch.sort agrees on the values (its tie order may differ, so not on the indices).
    np.testing.assert_array_equal(values.numpy(), torch.sort(x, -1).values.numpy())


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="x: expected float32"):
        sort_rows(torch.zeros((2, 3), dtype=torch.float64))
    with pytest.raises(ValueError, match="x: expected a \\[R, C\\] tensor"):
        sort_rows(torch.zeros(3))
    with pytest.raises(ValueError, match="indices: expected torch.int32"):
        sort_rows(torch.zeros((2, 3)), indices=torch.zeros((2, 3), dtype=torch.int64))
