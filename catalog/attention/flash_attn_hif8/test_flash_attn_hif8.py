"""flash_attn_hif8 against float64 online attention with the HiF8 value path replayed in numpy
(to_hif8 written from CATALOG.md's definition), and the value path seen directly."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.attention.flash_attn_hif8.kernel import flash_attn_hif8, reference, to_hif8

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]


def test_to_hif8_reference_on_the_contract_values():
    x = [1.07, 18.0, 320.0, 40959.0, 40960.0, -1.07, 0.3, 100.0, 2.0 ** -23, 2.0 ** -24,
         math.inf, 0.0]
    want = [1.125, 20.0, 384.0, 32768.0, np.finfo(np.float32).max, -1.125, 0.3125, 96.0,
            2.0 ** -22, 0.0, math.inf, 0.0]
    np.testing.assert_array_equal(to_hif8(x), want)
    assert np.isnan(to_hif8([math.nan])[0])
    assert to_hif8([40960.0], saturate=False)[0] == math.inf


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_flash_attn_hif8(case):
    backend, (b, h, s1, s2, d), dtype = case
    q = s.strided((b * h, s1, d), s.dtype_of(dtype), seed=1, kind="swap")
    k = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=2)
    v = s.strided((b * h, s2, d), s.dtype_of(dtype), seed=3)
    outs = s.poisoned((b * h, s1, d)), s.poisoned((b * h, s1)), s.poisoned((b * h, s1))
    with s.on_backend(backend):
        flash_attn_hif8(q, k, v, None, *outs)
    for name, got, want in zip(("out", "rowmax", "rowsum"), outs, reference(q, k, v)):
        s.assert_close(name, got, want, TOL[name])
        s.check_untouched(got)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_the_value_path_is_hif8_of_128p(backend):
    # One query; key i scores log(x_i / 128) against a max of 0, so p_i = x_i / 128, and v is
    # the identity: out[i] * rowsum = to_hif8(x_i) / 128 (then float16, exact here), while
    # rowsum keeps the unrounded sum of the x_i / 128.
    x = torch.tensor([128.0, 100.0, 18.5, 1.07, 0.3, 5.3, 58.0, 0.01], dtype=torch.float64)
    n = len(x)
    q = torch.zeros((1, 1, n))
    q[0, 0, 0] = 1.0
    k = torch.zeros((1, n, n))
    k[0, :, 0] = torch.log(x / 128.0).float()
    v = torch.eye(n)[None]
    outs = s.poisoned((1, 1, n)), s.poisoned((1, 1)), s.poisoned((1, 1))
    with s.on_backend(backend):
        flash_attn_hif8(q, k, v, 1.0, *outs)
    out, rowmax, rowsum = (s.f64(t) for t in outs)
    p = np.exp(s.f64(k)[0, :, 0])  # the float32 scores' exact p
    np.testing.assert_allclose(rowsum[0, 0], p.sum(), rtol=1e-6)
    np.testing.assert_allclose(out[0, 0] * rowsum[0, 0], to_hif8(p * 128.0) / 128.0, rtol=1e-6)
    np.testing.assert_array_equal(to_hif8(p * 128.0)[:5], [128.0, 96.0, 20.0, 1.125, 0.3125])
    assert rowmax[0, 0] == 0.0


def test_rejects_mixed_dtypes():
    q = s.strided((2, 8, 16), s.dtype_of("float16"), seed=1)
    k = s.strided((2, 8, 16), s.dtype_of("float32"), seed=2)
    with pytest.raises(TypeError, match="k: expected torch.float16 like q"):
        flash_attn_hif8(q, k, k)
