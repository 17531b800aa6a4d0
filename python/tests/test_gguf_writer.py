"""bench/gguf_writer.py (the GGUF files llama.cpp runs in the llama.cpp report): its output parsed
back by a minimal reader written here from the GGUF v3 spec, Q8_0 / Q4_0 blocks against a float64
reference quantisation, and the q/k rotary row order against a float64 rotary of both orders."""
import json
import os
import struct
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import gguf_writer as gw  # noqa: E402

TYPE_IDS = {0: "F32", 1: "F16", 2: "Q4_0", 8: "Q8_0", 30: "BF16"}


class Reader:
    """GGUF v3: header, metadata, tensor infos, aligned data (written independently of
    gguf_writer)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        self.pos = 0
        assert self.take(4) == b"GGUF"
        version, n_tensors, n_kv = self.unpack("<IQQ")
        assert version == 3
        self.meta = {}
        for _ in range(n_kv):
            key = self.string()
            (kind,) = self.unpack("<I")
            self.meta[key] = self.value(kind)
        self.infos = {}
        for _ in range(n_tensors):
            name = self.string()
            (n_dims,) = self.unpack("<I")
            dims = self.unpack(f"<{n_dims}Q")
            kind, offset = self.unpack("<IQ")
            self.infos[name] = (tuple(reversed(dims)), TYPE_IDS[kind], offset)
        alignment = self.meta.get("general.alignment", 32)
        self.base = -(-self.pos // alignment) * alignment
        assert all(off % alignment == 0 for _, _, off in self.infos.values())

    def take(self, n):
        out = self.data[self.pos:self.pos + n]
        assert len(out) == n, "truncated file"
        self.pos += n
        return out

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def string(self):
        (n,) = self.unpack("<Q")
        return self.take(n).decode("utf-8")

    def value(self, kind):
        if kind == 8:
            return self.string()
        if kind == 9:
            elem, count = self.unpack("<IQ")
            return [self.value(elem) for _ in range(count)]
        fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
               11: "<q", 12: "<d"}[kind]
        return self.unpack(fmt)[0]

    def raw(self, name):
        shape, kind, offset = self.infos[name]
        count = int(np.prod(shape))
        size = {"F32": 4 * count, "F16": 2 * count, "BF16": 2 * count,
                "Q8_0": count // 32 * 34, "Q4_0": count // 32 * 18}[kind]
        begin = self.base + offset
        assert begin + size <= len(self.data)
        return np.frombuffer(self.data, np.uint8, size, begin), shape, kind


def half(b):  # two little-endian bytes -> float64
    return b.copy().view("<f2").astype(np.float64).reshape(-1)


def round_away(v):  # C's roundf in float64
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def check_q8_0(raw, x):
    """Codes equal the float64 rounding of x/d except at float32 ties; the dequantised values are
    within d/2 plus the fp16 rounding of d (127 codes of it)."""
    blocks = raw.reshape(-1, 34)
    d16 = half(blocks[:, :2])
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float64)
    xb = x.astype(np.float64).reshape(-1, 32)
    d = np.abs(xb).max(1) / 127
    safe = np.where(d == 0, 1, d)[:, None]
    ref = np.where(d[:, None] == 0, 0, round_away(xb / safe))
    tie = np.abs(np.abs(xb / safe) % 1 - 0.5) < 1e-4
    assert np.all((q == ref) | tie)
    assert np.all(np.abs(q) <= 127)
    bound = d * (0.5 + 127 * 2.0**-11) + 1e-12
    assert np.all(np.abs(q * d16[:, None] - xb) <= bound[:, None])
    return q * d16[:, None]


def check_q4_0(raw, x):
    """Codes: byte j's low nibble is element j, its high nibble element j + 16; d = (the element
    of largest magnitude) / -8; codes match floor(x/d + 8.5) clamped to 15 in float64."""
    blocks = raw.reshape(-1, 18)
    d16 = half(blocks[:, :2])
    codes = blocks[:, 2:]
    q = np.concatenate([codes & 15, codes >> 4], axis=1).astype(np.float64)
    xb = x.astype(np.float64).reshape(-1, 32)
    d = xb[np.arange(len(xb)), np.abs(xb).argmax(1)] / -8
    safe = np.where(d == 0, 1, d)[:, None]
    ref = np.where(d[:, None] == 0, 8, np.minimum(np.floor(xb / safe + 8.5), 15))
    tie = np.abs((xb / safe + 8.5) % 1) < 1e-4
    assert np.all((q == ref) | tie)
    deq = (q - 8) * d16[:, None]
    clamped = xb / safe > 6.5  # the code 15 = +7 reaches only to 7·d
    ad = np.abs(d)[:, None]
    bound = np.where(clamped, ad, ad / 2) + 8 * ad * 2.0**-11 + 1e-12
    assert np.all(np.abs(deq - xb) <= bound)
    return deq


def tailed(rng, shape):
    """Normal values with heavy tails and exact zeros, and one all-zero block."""
    x = rng.standard_normal(shape) * np.exp(rng.standard_normal(shape))
    x[rng.random(shape) < 0.05] = 0
    x.reshape(-1)[:32] = 0
    return x.astype(np.float32)


def test_writer_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    tensors = {"f32": ("F32", tailed(rng, (3, 5))), "f16": ("F16", tailed(rng, (2, 7))),
               "bf16": ("BF16", tailed(rng, (4, 3))), "q8": ("Q8_0", tailed(rng, (3, 96))),
               "q4": ("Q4_0", tailed(rng, (5, 64))), "q4_1d": ("Q4_0", tailed(rng, (64,)))}
    w = gw.GGUFWriter()
    w.add("general.architecture", gw.STRING, "llama")
    w.add("n", gw.UINT32, 22)
    w.add("eps", gw.FLOAT32, 1e-6)
    w.add("flag", gw.BOOL, True)
    w.add("words", gw.ARRAY, (gw.STRING, ["a", "<0x0A>", "é"]))
    w.add("scores", gw.ARRAY, (gw.FLOAT32, [0.0, -1.5]))
    w.add("types", gw.ARRAY, (gw.INT32, [1, 6, -3]))
    for name, (kind, x) in tensors.items():
        w.add_tensor(name, x.shape, kind, lambda x=x: x)
    path = tmp_path / "m.gguf"
    w.write(path)
    r = Reader(path)
    assert r.meta == {"general.architecture": "llama", "n": 22,
                      "eps": pytest.approx(1e-6, rel=1e-7), "flag": True,
                      "words": ["a", "<0x0A>", "é"], "scores": [0.0, -1.5], "types": [1, 6, -3]}
    assert list(r.infos) == list(tensors)
    for name, (kind, x) in tensors.items():
        raw, shape, got_kind = r.raw(name)
        assert (shape, got_kind) == (x.shape, kind)
        if kind == "F32":
            np.testing.assert_array_equal(raw.view("<f4").reshape(shape), x)
        elif kind == "F16":
            np.testing.assert_array_equal(raw.view("<f2").reshape(shape), x.astype(np.float16))
        elif kind == "BF16":
            got = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
            # the nearest bfloat16: within half an ulp (8 significant bits)
            assert np.all(np.abs(got.astype(np.float64) - x) <= np.abs(x) * 2.0**-9)
        elif kind == "Q8_0":
            check_q8_0(raw, x)
        else:
            check_q4_0(raw, x)
    # the file ends with the last tensor, padded to the alignment
    assert os.path.getsize(path) == r.base + max(off for _, _, off in r.infos.values()) + 64


def test_q4_0_and_q8_0_extremes():
    x = np.zeros((1, 32), np.float32)
    x[0, 3], x[0, 20], x[0, 31] = -2.0, 1.75, 2.0  # first max-magnitude element: -2 -> d = 0.25
    q4 = gw.quantize_q4_0(x)
    assert half(q4[:2])[0] == 0.25
    assert q4[2 + 3] & 15 == 0 and q4[2 + 4] >> 4 == 15  # -2 -> 0; 1.75 = 7 d -> 15; 2 clamps
    assert q4[2 + 15] >> 4 == 15
    q8 = gw.quantize_q8_0(x)
    assert q8[2:].view(np.int8)[31] == 127 and q8[2:].view(np.int8)[3] == -127
    ties = np.zeros((1, 32), np.float32)
    ties[0, :4] = [127, 0.5, 1.5, -2.5]  # d = 1: C's roundf rounds halves away from zero
    assert list(gw.quantize_q8_0(ties)[2:6].view(np.int8)) == [127, 1, 2, -3]


def test_bad_inputs():
    with pytest.raises(ValueError, match="multiple of 32"):
        gw.tensor_nbytes("Q8_0", (4, 33))
    with pytest.raises(ValueError, match="tensor type must be one of"):
        gw.tensor_nbytes("Q4_K", (4, 32))
    with pytest.raises(ValueError, match="positive integers"):
        gw.tensor_nbytes("F32", (0, 32))
    w = gw.GGUFWriter()
    w.add_tensor("a", (2, 32), "F32", lambda: np.zeros((2, 31)))
    with pytest.raises(ValueError, match="produced shape"):
        w.write(os.devnull)
    with pytest.raises(ValueError, match="added twice"):
        w.add_tensor("a", (2, 32), "F32", lambda: None)


def rotate(x, positions, theta, neox):
    """float64 rotary over the last dim: neox pairs (i, i + d/2), else adjacent (2i, 2i + 1)."""
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2) / d)
    ang = positions[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    a, b = (x[..., :d // 2], x[..., d // 2:]) if neox else (x[..., 0::2], x[..., 1::2])
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if neox:
        return np.concatenate([ra, rb], -1)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = ra, rb
    return out


def test_rotary_row_order_gives_the_same_scores():
    """q·k after our (neox) rotary on our rows equals llama.cpp's adjacent-pair rotary on the
    permuted rows, per head."""
    rng = np.random.default_rng(3)
    heads, d, hidden, tokens = 2, 8, 12, 5
    wq, wk = rng.standard_normal((heads * d, hidden)), rng.standard_normal((heads * d, hidden))
    x, pos = rng.standard_normal((tokens, hidden)), np.arange(tokens, dtype=np.float64) + 3
    for w in (wq, wk):
        p = gw.rotary_rows_to_gguf(w.astype(np.float32), heads)
        for h in range(heads):
            for i in range(d // 2):
                np.testing.assert_array_equal(p[h * d + 2 * i], w[h * d + i].astype(np.float32))
                np.testing.assert_array_equal(p[h * d + 2 * i + 1],
                                              w[h * d + i + d // 2].astype(np.float32))

    def scores(q_rows, k_rows, neox):
        q = rotate((x @ q_rows.T).reshape(tokens, heads, d).transpose(1, 0, 2), pos, 1e4, neox)
        k = rotate((x @ k_rows.T).reshape(tokens, heads, d).transpose(1, 0, 2), pos, 1e4, neox)
        return q @ k.transpose(0, 2, 1)

    ours = scores(wq, wk, True)
    theirs = scores(gw.rotary_rows_to_gguf(wq, heads), gw.rotary_rows_to_gguf(wk, heads), False)
    np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-12)
    unpermuted = scores(wq, wk, False)
    assert np.abs(unpermuted - ours).max() > 1e-3  # the permutation is needed


def write_export(directory, rng, tie):
    """A 2-layer llama export as llama_generate --export writes it (bf16 safetensors)."""
    c = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "intermediate_size": 96, "vocab_size": 300, "max_position_embeddings": 128,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": tie}
    shapes = {"model.embed_tokens.weight": (300, 64), "model.norm.weight": (64,)}
    for i in range(2):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (64,), p + "self_attn.q_proj.weight": (64, 64),
                       p + "self_attn.k_proj.weight": (32, 64),
                       p + "self_attn.v_proj.weight": (32, 64),
                       p + "self_attn.o_proj.weight": (64, 64),
                       p + "post_attention_layernorm.weight": (64,),
                       p + "mlp.gate_proj.weight": (96, 64), p + "mlp.up_proj.weight": (96, 64),
                       p + "mlp.down_proj.weight": (64, 96)})
    if not tie:
        shapes["lm_head.weight"] = (300, 64)
    header, blobs, offset, values = {}, [], 0, {}
    for name, shape in shapes.items():
        bits = gw.to_bf16_bits(rng.standard_normal(shape).astype(np.float32))
        values[name] = (bits.astype(np.uint32) << 16).view(np.float32)
        header[name] = {"dtype": "BF16", "shape": list(shape),
                        "data_offsets": [offset, offset + bits.nbytes]}
        blobs.append(bits.tobytes())
        offset += bits.nbytes
    head = json.dumps(header).encode()
    with open(os.path.join(directory, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(c, f)
    return values


@pytest.mark.parametrize("kind,tie", [("BF16", False), ("Q8_0", True)])
def test_llama_export_converts(tmp_path, kind, tie):
    values = write_export(tmp_path, np.random.default_rng(5), tie)
    gw.write_llama_gguf(tmp_path, tmp_path / "m.gguf", kind)
    r = Reader(tmp_path / "m.gguf")
    m = r.meta
    assert m["general.architecture"] == "llama" and m["tokenizer.ggml.model"] == "llama"
    assert m["general.file_type"] == gw.FILE_TYPES[kind]
    assert (m["llama.block_count"], m["llama.embedding_length"], m["llama.feed_forward_length"],
            m["llama.attention.head_count"], m["llama.attention.head_count_kv"],
            m["llama.rope.dimension_count"], m["llama.context_length"]) == (2, 64, 96, 4, 2, 16,
                                                                             128)
    assert len(m["tokenizer.ggml.tokens"]) == len(set(m["tokenizer.ggml.tokens"])) == 300
    assert len(m["tokenizer.ggml.scores"]) == len(m["tokenizer.ggml.token_type"]) == 300
    assert m["tokenizer.ggml.tokens"][3 + 10] == "<0x0A>"  # the newline byte token
    assert ("output.weight" in r.infos) == (not tie)
    assert len(r.infos) == 2 + 9 * 2 + (not tie)
    raw, shape, got = r.raw("blk.1.attn_k.weight")
    assert (shape, got) == ((32, 64), kind)
    expected = gw.rotary_rows_to_gguf(values["model.layers.1.self_attn.k_proj.weight"], 2)
    if kind == "BF16":  # bf16 in, bf16 out: exact
        got_values = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
        np.testing.assert_array_equal(got_values, expected)
    else:
        check_q8_0(raw, expected)
    raw, shape, got = r.raw("blk.0.ffn_norm.weight")
    assert (shape, got) == ((64,), "F32")
    np.testing.assert_array_equal(raw.view("<f4"),
                                  values["model.layers.0.post_attention_layernorm.weight"])


def test_llama_export_refuses_qwen2(tmp_path):
    write_export(tmp_path, np.random.default_rng(5), False)
    with open(tmp_path / "config.json") as f:
        c = json.load(f)
    c["model_type"] = "qwen2"
    with open(tmp_path / "config.json", "w") as f:
        json.dump(c, f)
    with pytest.raises(ValueError, match="only llama checkpoints"):
        gw.write_llama_gguf(tmp_path, tmp_path / "m.gguf", "F16")
