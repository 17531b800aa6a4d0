"""matmul_e5m2_shortcut against float64 x @ y^T of the decoded float8 codes, both formats."""

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.matmul.matmul_e5m2_shortcut.kernel import (decode_table, matmul_e5m2_shortcut,
                                                        nearest_codes, reference)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["z"]


def test_decode_table_on_known_values():
    e5, e4 = decode_table("e5m2"), decode_table("e4m3fn")
    assert (e5[0x3C], e5[0x01], e5[0x7B], e5[0xC0]) == (1.0, 2.0**-16, 57344.0, -2.0)
    assert np.isinf(e5[0x7C]) and np.isnan(e5[0x7D])
    assert (e4[0x38], e4[0x01], e4[0x7E], e4[0xB8]) == (1.0, 2.0**-9, 448.0, -1.0)
    assert np.isnan(e4[0x7F]) and np.isnan(e4[0xFF])
    # e5m2 is float16's top byte: the table agrees with numpy's float16 on every finite code.
    f16 = (np.arange(256, dtype=np.uint16) << 8).view(np.float16).astype(np.float64)
    np.testing.assert_array_equal(e5[np.isfinite(e5)], f16[np.isfinite(e5)])
    assert list(nearest_codes([1.05, 1.1, -0.26, 1e6], "e4m3fn")) == [0x38, 0x39, 0xA8, 0x7E]


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_matmul_e5m2_shortcut(case):
    backend, (m, n, k), dtype = case
    fmt = dtype.removeprefix("float8_")
    x = s.coded((m, k), lambda v: nearest_codes(v, fmt), seed=1)
    y = s.coded((n, k), lambda v: nearest_codes(v * 4 / k**0.5, fmt), seed=2)  # O(1) z
    out = s.poisoned((m, n))
    with s.on_backend(backend):
        matmul_e5m2_shortcut(x, y, fmt, out)
    s.assert_close("z", out, reference(x, y, fmt), TOL)
    s.check_untouched(out)


def test_rejects_bad_arguments():
    c = torch.zeros((4, 8), dtype=torch.uint8)
    with pytest.raises(ValueError, match="fmt: expected one of"):
        matmul_e5m2_shortcut(c, c, "e3m4")
    with pytest.raises(TypeError, match="y: expected torch.uint8 storage"):
        matmul_e5m2_shortcut(c, c.half())
    with pytest.raises(ValueError, match=r"y: expected \[N, 8\]"):
        matmul_e5m2_shortcut(c, c[:, :7])
