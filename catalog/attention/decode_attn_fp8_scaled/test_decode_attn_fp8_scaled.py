"""decode_attn_fp8_scaled against float64 attention of the dequantised e4m3 inputs with the
e4m3(16·p) value path replayed in numpy, tails in S."""

import math

import numpy as np
import pytest
import torch

from catalog import _support as s
from catalog.attention.decode_attn_fp8_scaled.kernel import (decode_attn_fp8_scaled, e4m3_decode,
                                                             e4m3_encode, reference, to_e4m3)

ENTRY = s.load_entry(__file__)
TOL = ENTRY["validated"]["tolerances"]["out"]
SCALES = (0.5, 0.25, 3.0)  # scale_q, scale_k, scale_v


def codes(shape, seed, kind="pad"):
    return s.coded(shape, lambda x: e4m3_encode(to_e4m3(x)), seed, scale=2.0, kind=kind)


def test_e4m3_reference_helpers():
    all_codes = np.arange(256, dtype=np.uint8)
    values = e4m3_decode(all_codes)
    finite = ~np.isnan(values)
    assert int(finite.sum()) == 254 and np.nanmax(values) == 448.0
    np.testing.assert_array_equal(to_e4m3(values[finite]), values[finite])
    positive = finite & (all_codes != 0x80)
    np.testing.assert_array_equal(e4m3_encode(values[positive]), all_codes[positive])
    x = [1.0625, 1.1875, 2.0 ** -10, 3.0 * 2.0 ** -10, 464.0, 1e6, -0.3]
    want = [1.0, 1.25, 0.0, 2.0 ** -8, 448.0, 448.0, -0.3125]
    np.testing.assert_array_equal(to_e4m3(x), want)


@pytest.mark.parametrize("case", s.cases(ENTRY), ids=s.case_id)
def test_decode_attn_fp8_scaled(case):
    backend, (b, h, n, d), _ = case
    q = codes((b * h, d), seed=1)
    k = codes((b * h, n, d), seed=2, kind="swap")
    v = codes((b * h, n, d), seed=3)
    out = s.poisoned((b * h, d))
    with s.on_backend(backend):
        decode_attn_fp8_scaled(q, k, v, *SCALES, out=out)
    s.assert_close("out", out, reference(q, k, v, *SCALES), TOL)
    s.check_untouched(out)


@pytest.mark.parametrize("backend", s.selected_backends())
def test_the_value_path_is_e4m3_of_16p(backend):
    # One query row; key i scores log(x_i / 16) against a max of 0, so 16·p_i = x_i, and v is
    # the identity: out[i] = e4m3(x_i) / 16 · scale_v / rowsum.
    x = np.array([16.0, 9.3, 5.2, 1.7, 0.3, 0.05, 0.004, 11.0])
    n = len(x)
    q = torch.from_numpy(e4m3_encode(np.eye(n)[:1]))  # q = e_0
    k = np.zeros((1, n, n))
    k[0, :, 0] = to_e4m3(np.log(x / 16.0))
    v = torch.from_numpy(e4m3_encode(np.eye(n)[None]))
    out = s.poisoned((1, n))
    with s.on_backend(backend):
        decode_attn_fp8_scaled(q, torch.from_numpy(e4m3_encode(k)), v, 1.0, 1.0, 2.0, 1.0,
                               out=out)
    p = np.exp(k[0, :, 0])  # the stored scores' exact p
    want = to_e4m3(16.0 * p) / 16.0 * 2.0 / p.sum()
    np.testing.assert_allclose(s.f64(out)[0], want, rtol=1e-6)
    assert not np.allclose(want, 2.0 * p / p.sum(), rtol=1e-2)  # the rounding is visible


def test_rejects_bad_arguments():
    c = codes((2, 16), seed=1)
    kv = codes((2, 5, 16), seed=2)
    with pytest.raises(TypeError, match="k: expected torch.uint8 storage of float8_e4m3fn"):
        decode_attn_fp8_scaled(c, kv.float(), kv, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="scale_v: expected a finite float"):
        decode_attn_fp8_scaled(c, kv, kv, 1.0, 1.0, math.nan)
