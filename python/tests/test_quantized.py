"""quantize_weight + linear_quantized against torch: a float64 reference quantizer written here
(its scales and codes compared exactly with the buffer, decoded from the documented layout) and
F.linear over the dequantized float64 weights; every format, dtype and layout, decode and prefill
rows, the allocated outputs, the class form and the errors (ValueError naming the argument)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import FLOATS, LAYOUTS, TOLERANCE, make, poisoned
from tileops import ops

FORMATS = [(8, 0, True), (8, 64, True), (4, 32, True), (4, 128, True), (4, 32, False),
           (4, 64, False)]


def round_half_away(t):
    """C's round (torch.round rounds half to even)."""
    return torch.sign(t) * torch.floor(t.abs() + 0.5)


def reference(w, bits, group_size, symmetric):
    """(scales [N, G], zero points [N, G], codes [N, K] as stored, dequantized [N, K] float64)."""
    w = w.double()
    n, k = w.shape
    group = group_size or k
    g = w.reshape(n, k // group, group)
    if symmetric:
        qmax, qmin = (127.0, -127.0) if bits == 8 else (7.0, -8.0)
        s = (g.abs().amax(-1) / qmax).float().double()
        z = torch.zeros_like(s)
    else:
        lo, hi = g.amin(-1).clamp(max=0), g.amax(-1).clamp(min=0)
        s = ((hi - lo) / 15.0).float().double()
        z = torch.where(s == 0, torch.zeros_like(s), round_half_away(-lo / s).clamp(0, 15))
        qmin, qmax = 0.0, 15.0
    safe = torch.where(s == 0, torch.ones_like(s), s)
    q = torch.where(s[..., None] == 0, torch.zeros_like(g), round_half_away(g / safe[..., None]))
    q = (q + z[..., None]).clamp(qmin, qmax)
    deq = s[..., None] * (q - z[..., None])
    stored_z = torch.full_like(s, 8.0) if bits == 4 and symmetric else z
    stored_q = q + 8 if bits == 4 and symmetric else q
    return s.float(), stored_z.float(), stored_q.reshape(n, k).long(), deq.reshape(n, k)


def decode(buf, bits, group_size, symmetric):
    """The buffer as docs/quantized-weights.md lays it out: (scales, zeros, codes) of the real rows."""
    b = np.asarray(buf).view(np.uint8)
    magic, = b[0:4].view(np.uint32)
    assert magic == 0x57514F54 and b[4:6].view(np.uint16)[0] == 2
    assert (b[6], b[7], b[8:12].view(np.int32)[0]) == (bits, int(symmetric), group_size)
    n, k, total = b[16:40].view(np.int64)
    assert total == b.size
    k_padded = k if group_size else (k + 63) // 64 * 64
    group = group_size or k_padded
    groups, tiles = k_padded // group, (n + 3) // 4
    meta, row_bytes = (16 if symmetric else 32), group * bits // 8
    blocks = b[64:].reshape(tiles, groups, meta + 4 * row_bytes)
    scales = blocks[..., :16].copy().view(np.float32).transpose(0, 2, 1).reshape(tiles * 4, groups)
    zeros = (blocks[..., 16:32].copy().view(np.float32).transpose(0, 2, 1).reshape(tiles * 4, groups)
             if not symmetric else np.full_like(scales, 8.0 if bits == 4 else 0.0))
    run = min(64, row_bytes)  # the 4 rows' codes interleaved in runs of `run` bytes
    codes = blocks[..., meta:].reshape(tiles, groups, row_bytes // run, 4, run)
    codes = codes.transpose(0, 1, 3, 2, 4).reshape(tiles, groups, 4, row_bytes)
    codes = codes.transpose(0, 2, 1, 3)
    if bits == 8:
        codes = codes.view(np.int8).astype(np.int64)
    else:
        codes = np.concatenate([codes & 15, codes >> 4], axis=-1).astype(np.int64)
    codes = codes.reshape(tiles * 4, k_padded)
    return scales[:n], zeros[:n], codes[:n, :k]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_linear_quantized(dtype, layout, fmt):
    bits, group_size, symmetric = fmt
    k = 128 if group_size else 100
    w = make((21, k), dtype, layout, low=-0.5, high=1.5, seed=1)
    q = ops.quantize_weight(w, bits, group_size, symmetric)
    assert q.dtype == torch.uint8 and q.dim() == 1
    assert q.numel() == ops.quantized_weight_bytes(21, k, bits, group_size, symmetric)
    s, z, codes, deq = reference(w, bits, group_size, symmetric)
    got_s, got_z, got_codes = decode(q, bits, group_size, symmetric)
    np.testing.assert_array_equal(got_s, s.numpy())
    np.testing.assert_array_equal(got_z, z.numpy())
    np.testing.assert_array_equal(got_codes, codes.numpy())
    for rows in (1, 3, 17):
        x = make((rows, k), dtype, layout, seed=rows)
        bias = make((21,), dtype, seed=2)
        got = ops.linear_quantized(x, q, bias)
        assert got.dtype == dtype and got.shape == (rows, 21)
        ref = F.linear(x.double(), deq, bias.double())
        mag = x.double().abs() @ (s.double().repeat_interleave(group_size or k, 1)[:, :k]
                                  * (codes.double().abs() + 8)).T
        err = (got.double() - ref).abs()
        bound = TOLERANCE[dtype] * (1 + ref.abs()) + 1e-5 * mag
        if dtype == torch.bfloat16:  # grouped weights may be rounded to bfloat16 (2^-9 relative)
            bound = bound + 2.0 ** -9 * (x.double().abs() @ deq.abs().T)
        assert bool((err <= bound).all()), f"max error {err.max().item()}"


def test_given_outputs_and_class_form():
    w = make((8, 64), torch.bfloat16, seed=3)
    buf = torch.empty(ops.quantized_weight_bytes(8, 64, 4, 32, False), dtype=torch.uint8)
    assert ops.quantize_weight(w, 4, 32, False, qweight=buf) is buf
    x = make((2, 3, 64), torch.bfloat16, seed=4)
    out = poisoned((2, 3, 8), torch.bfloat16)
    assert ops.linear_quantized(x, buf, None, out=out) is out
    op = ops.LinearQuantized(x, buf, None, out)
    again = poisoned((2, 3, 8), torch.bfloat16)
    op(x, buf, None, again)
    assert torch.equal(out, again)


def test_errors():
    w = make((8, 64), torch.float32)
    with pytest.raises(ValueError, match="'bits'"):
        ops.quantize_weight(w, 3)
    with pytest.raises(ValueError, match="'group_size'"):
        ops.quantize_weight(w, 4, 0)
    with pytest.raises(ValueError, match="multiple of group_size"):
        ops.quantize_weight(make((8, 96), torch.float32), 4, 64)
    bad = w.clone()
    bad[3, 5] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        ops.quantize_weight(bad)
    q = ops.quantize_weight(w, 8, 32)
    with pytest.raises(ValueError, match="'input'"):
        ops.linear_quantized(make((2, 32), torch.float32), q)
    corrupt = q.clone()
    corrupt[0] ^= 1
    with pytest.raises(ValueError, match="'qweight'"):
        ops.linear_quantized(make((2, 64), torch.float32), corrupt)
    with pytest.raises(ValueError, match="'qweight'"):
        ops.linear_quantized(make((2, 64), torch.float32), q[:-1])
    with pytest.raises((ValueError, TypeError), match="'qweight'"):
        ops.linear_quantized(make((2, 64), torch.float32), q.float())


@pytest.mark.parametrize("fmt", [(4, 32, False), (4, 64, True), (8, 0, True), (8, 32, True)])
def test_pack_quantized_codes(fmt):
    """quantize_weight's codes and scales packed again give its bytes; checkpoint-like codes
    (zero points up to 16, float16 scales as a transposed [groups, N] view) run through
    linear_quantized as scale * (code - zero) against F.linear in float64."""
    bits, group_size, symmetric = fmt
    k = 128 if group_size else 100
    w = make((13, k), torch.float32, seed=5)
    q = ops.quantize_weight(w, bits, group_size, symmetric)
    s, z, codes, _ = reference(w, bits, group_size, symmetric)
    code_dtype = torch.uint8 if bits == 4 else torch.int8
    again = ops.pack_quantized_codes(codes.to(code_dtype), s.T.contiguous().T,
                                     None if symmetric else z, bits, group_size)
    assert torch.equal(again, q)
    if bits == 8:
        return
    gen = torch.Generator().manual_seed(6)
    groups = k // group_size
    codes = torch.randint(0, 16, (13, k), generator=gen)
    zeros = (torch.full((13, groups), 8.0) if symmetric
             else torch.randint(0, 17, (13, groups), generator=gen).float())
    scales = (torch.randint(1, 64, (groups, 13), generator=gen) / 2048).half()
    packed = ops.pack_quantized_codes(codes.to(torch.uint8), scales.T,
                                      None if symmetric else zeros, 4, group_size)
    deq = (scales.T.double().repeat_interleave(group_size, 1)
           * (codes.double() - zeros.double().repeat_interleave(group_size, 1)))
    x = make((3, k), torch.float32, seed=7)
    got = ops.linear_quantized(x, packed)
    torch.testing.assert_close(got.double(), x.double() @ deq.T, rtol=1e-5, atol=1e-5)
    bad = codes.to(torch.uint8)
    bad[2, 3] = 16
    with pytest.raises(ValueError, match="'codes'"):
        ops.pack_quantized_codes(bad, scales.T, None if symmetric else zeros, 4, group_size)
    with pytest.raises(ValueError, match="'scales'"):
        ops.pack_quantized_codes(codes.to(torch.uint8), scales, None, 4, group_size)


# --- scaled_mm (vLLM's cutlass_scaled_mm) ----------------------------------------------------
def decode_fp8(codes, kind):
    """float64 values of uint8 float8 codes, from the formats' bit fields (OCP FP8)."""
    c = codes.numpy().astype(np.int64)
    e4m3 = kind == "float8_e4m3fn"
    mant_bits, bias = (3, 7) if e4m3 else (2, 15)
    e = (c & 0x7F) >> mant_bits
    m = c & ((1 << mant_bits) - 1)
    frac = np.where(e == 0, m / 2.0 ** mant_bits, 1.0 + m / 2.0 ** mant_bits)
    v = np.ldexp(frac, np.where(e == 0, 1, e) - bias) * np.where(c & 0x80, -1.0, 1.0)
    if e4m3:
        v = np.where((c & 0x7F) == 0x7F, np.nan, v)
    else:
        v = np.where(e == 31, np.where(m == 0, np.copysign(np.inf, v), np.nan), v)
    return torch.from_numpy(v)


def random_codes(shape, kind, gen):
    """uint8 codes of finite values with |v| <= 16, subnormals and zeros included."""
    codes = torch.randint(0, 256, shape, generator=gen, dtype=torch.int64).to(torch.uint8)
    v = decode_fp8(codes, kind)
    ok = torch.isfinite(v) & (v.abs() <= 16)
    return torch.where(ok, codes, torch.zeros_like(codes))


@pytest.mark.parametrize("kind", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scales", ["tensor", "token_channel", "block"])
@pytest.mark.parametrize("m", [1, 5, 17])
@pytest.mark.parametrize("index", [0, 1], ids=["native", "tl"])
def test_scaled_mm(kind, out_dtype, scales, m, index):
    gen = torch.Generator().manual_seed(m * 7 + len(scales))
    n, k = (200, 300) if scales == "block" else (33, 130)
    a = random_codes((m, k), kind, gen)
    w = random_codes((n, k), kind, gen)  # vLLM's weight [N, K]; b = w.t()
    kb, nb = -(-k // 128), -(-n // 128)
    shapes = {"tensor": ((1,), (1,)), "token_channel": ((m, 1), (n, 1)),
              "block": ((m, kb), (kb, nb))}[scales]
    sa = torch.rand(shapes[0], generator=gen) * 0.1 + 0.01
    sb = torch.rand(shapes[1], generator=gen) * 0.1 + 0.01
    if scales == "block":  # vLLM passes Bs.T, the transpose of the weight's [N/128, K/128]
        sb = (torch.rand(nb, kb, generator=gen) * 0.1 + 0.01).t()
    bias = torch.randn(n, generator=gen).to(out_dtype)
    out = ops.scaled_mm(a, w.t(), sa, sb, bias, out_dtype=out_dtype, fp8_dtype=kind,
                        implementation_index=index)
    assert out.dtype == out_dtype and out.shape == (m, n)
    av, bv = decode_fp8(a, kind), decode_fp8(w, kind).t()
    if scales == "block":
        av = av * sa.double().repeat_interleave(128, 1)[:, :k]
        bv = bv * sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:k, :n]
        ref = av @ bv
        mag = av.abs() @ bv.abs()
    else:
        s = sa.double().reshape(-1, 1) * sb.double().reshape(1, -1)
        ref, mag = (av @ bv) * s, (av.abs() @ bv.abs()) * s
    ref = ref + bias.double()
    rounding = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
    bound = mag * (k + 4) * 2.0 ** -23 + ref.abs() * rounding[out_dtype]
    assert ((out.double() - ref).abs() <= bound).all()


def test_scaled_mm_strided_out_and_vllm_form():
    gen = torch.Generator().manual_seed(3)
    kind = "float8_e4m3fn"
    a = random_codes((2, 3, 64), kind, gen)
    w = random_codes((40, 64), kind, gen)
    sa, sb = torch.rand(6, 1, generator=gen), torch.rand(40, 1, generator=gen)
    from tileops import vllm
    got = vllm.cutlass_scaled_mm(a, w.t(), sa, sb, torch.bfloat16)
    assert got.shape == (2, 3, 40) and got.dtype == torch.bfloat16
    ref = (decode_fp8(a.reshape(6, 64), kind) @ decode_fp8(w, kind).t()) * sa.double() * \
        sb.double().t()
    assert torch.allclose(got.reshape(6, 40).double(), ref, rtol=2 ** -7, atol=1e-6)
    # A strided out: every other column of a wider poisoned buffer.
    wide = torch.full((6, 80), float("nan"))
    ops.scaled_mm(a.reshape(6, 64), w.t(), sa, sb, out=wide[:, ::2], fp8_dtype=kind)
    assert torch.allclose(wide[:, ::2].double(), ref, rtol=1e-5, atol=1e-6)
    assert torch.isnan(wide[:, 1::2]).all()


def test_scaled_mm_errors():
    a = torch.zeros(4, 130, dtype=torch.uint8)
    b = torch.zeros(40, 130, dtype=torch.uint8).t()
    sa, sb = torch.ones(4, 1), torch.ones(1, 40)
    kw = dict(out_dtype=torch.float32, fp8_dtype="float8_e4m3fn")
    with pytest.raises(TypeError, match="'fp8_dtype'"):
        ops.scaled_mm(a, b, sa, sb, out_dtype=torch.float32)
    with pytest.raises(TypeError, match="'out_dtype'"):
        ops.scaled_mm(a, b, sa, sb, fp8_dtype="float8_e4m3fn")
    with pytest.raises(ValueError, match="'b'"):
        ops.scaled_mm(a, b[:129], sa, sb, **kw)
    with pytest.raises(ValueError, match="'scale_a'"):
        ops.scaled_mm(a, b, torch.ones(5), sb, **kw)
    with pytest.raises(ValueError, match="'scale_b'"):
        ops.scaled_mm(a, b, torch.ones(4, 2), torch.ones(2, 2), **kw)
    with pytest.raises(TypeError, match="'scale_a'"):
        ops.scaled_mm(a, b, sa.double(), sb, **kw)
    with pytest.raises(TypeError, match="'bias'"):
        ops.scaled_mm(a, b, sa, sb, torch.zeros(40, dtype=torch.bfloat16), **kw)
    with pytest.raises(TypeError, match="'a'"):
        ops.scaled_mm(torch.zeros(4, 130), b, sa, sb, **kw)
