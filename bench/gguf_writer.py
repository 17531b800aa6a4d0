"""A GGUF v3 writer (numpy only) for the decoder's checkpoints, so that llama.cpp runs our model.

`write_llama_gguf(export_dir, path, weight_type)` converts what `llama_generate --export DIR`
writes (model.safetensors, config.json) into a llama.cpp `llama` model: F32 norms, the matrices in
F32, F16, BF16, Q8_0 or Q4_0, llama.cpp's tensor names, and a synthetic SentencePiece-style vocab
(llama.cpp needs one to load a model; the reports feed token ids, never text).

The format, from the published GGUF spec: "GGUF", version 3, tensor and metadata counts (uint64),
metadata as (key, type, value), tensor infos (name, dims innermost first, ggml type, offset into
the data section), then the data section aligned to `general.alignment` (32). Q8_0 and Q4_0 are
blocks of 32 weights along a row: an fp16 scale d, then 32 int8 codes (x = d·q), or 16 bytes of
4-bit codes (x = d·(q - 8); byte j holds element j in its low nibble and element j + 16 in its
high nibble).

Rotary order: our decoder (like Hugging Face) rotates element i of a head with i + head_size/2;
llama.cpp's `llama` architecture rotates adjacent pairs (2i, 2i + 1). q and k rows are permuted
per head so that GGUF row 2i is our row i and row 2i + 1 our row i + head_size/2.
"""
import json
import os
import struct

import numpy as np

# ggml type: (id, elements per block, bytes per block)
GGML_TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
              "BF16": (30, 1, 2)}
# llama.cpp's llama_ftype for general.file_type ("mostly" the matrices' type)
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7, "BF16": 32}
QK = 32  # weights per Q8_0 / Q4_0 block
ALIGNMENT = 32

# GGUF metadata value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = \
    range(13)
_SCALAR_FORMATS = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I",
                   INT32: "<i", FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q",
                   FLOAT64: "<d"}
_ARRAY_DTYPES = {UINT8: "<u1", INT8: "<i1", UINT16: "<u2", INT16: "<i2", UINT32: "<u4",
                 INT32: "<i4", FLOAT32: "<f4", UINT64: "<u8", INT64: "<i8", FLOAT64: "<f8"}
_UINT64_MAX = 2**64 - 1


def _string(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _value(kind, value):
    if kind == STRING:
        return _string(value)
    if kind == ARRAY:
        elem, items = value
        head = struct.pack("<IQ", elem, len(items))
        if elem == STRING:
            return head + b"".join(_string(s) for s in items)
        if elem not in _ARRAY_DTYPES:
            raise ValueError(f"gguf: array element type {elem} is not supported")
        return head + np.asarray(items, dtype=_ARRAY_DTYPES[elem]).tobytes()
    if kind not in _SCALAR_FORMATS:
        raise ValueError(f"gguf: metadata type {kind} is not supported")
    return struct.pack(_SCALAR_FORMATS[kind], value)


def tensor_nbytes(ggml_type, shape):
    """Bytes of a tensor of `shape` (outermost first) in `ggml_type`; the rows (last dim) must
    hold whole blocks, and the count must fit GGUF's uint64."""
    if ggml_type not in GGML_TYPES:
        raise ValueError(f"gguf: tensor type must be one of {sorted(GGML_TYPES)}, got "
                         f"{ggml_type!r}")
    if not shape or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise ValueError(f"gguf: tensor shape must be positive integers, got {shape}")
    _, block, block_bytes = GGML_TYPES[ggml_type]
    if shape[-1] % block:
        raise ValueError(f"gguf: {ggml_type} rows must be a multiple of {block} elements, "
                         f"got {shape[-1]}")
    count = 1
    for d in shape:
        count *= d
    nbytes = count // block * block_bytes
    if nbytes > _UINT64_MAX:
        raise ValueError(f"gguf: tensor of shape {shape} exceeds 2^64 bytes")
    return nbytes


def to_bf16_bits(x):
    """float32 -> bfloat16 bits (uint16), round to nearest even; NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    return np.where(np.isnan(x), np.uint32(0x7FC0), rounded).astype(np.uint16)


def _blocks(x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.shape[-1] % QK:
        raise ValueError(f"gguf: quantized rows must be a multiple of {QK}, got {x.shape[-1]}")
    return x.reshape(-1, QK)


def quantize_q8_0(x):
    """Q8_0 blocks of x's rows as bytes (uint8 array): d = max|x|/127 (fp16), q = round(x/d)."""
    b = _blocks(x)
    d = np.abs(b).max(axis=1) / np.float32(127)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    # Round half away from zero (C's roundf), not numpy's half to even.
    scaled = b * inv[:, None]
    q = (np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))).astype(np.int8)
    out = np.empty((b.shape[0], 34), dtype=np.uint8)
    out[:, :2] = d.astype(np.float16)[:, None].view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(-1)


def quantize_q4_0(x):
    """Q4_0 blocks of x's rows as bytes: m = the element of largest magnitude, d = m / -8 (fp16),
    q = min(15, floor(x/d + 8.5)); element j in the low nibble of byte j, j + 16 in its high."""
    b = _blocks(x)
    m = b[np.arange(b.shape[0]), np.abs(b).argmax(axis=1)]
    d = m / np.float32(-8)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(np.floor(b * inv[:, None] + np.float32(8.5)), 15).astype(np.uint8)
    out = np.empty((b.shape[0], 18), dtype=np.uint8)
    out[:, :2] = d.astype(np.float16)[:, None].view(np.uint8)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.reshape(-1)


def encode(ggml_type, x):
    """x (float32, rows last) in `ggml_type` as bytes."""
    if ggml_type == "F32":
        return np.ascontiguousarray(x, dtype="<f4").reshape(-1).view(np.uint8)
    if ggml_type == "F16":
        return np.ascontiguousarray(x, dtype="<f2").reshape(-1).view(np.uint8)
    if ggml_type == "BF16":
        return to_bf16_bits(x).reshape(-1).view(np.uint8)
    if ggml_type == "Q8_0":
        return quantize_q8_0(x)
    if ggml_type == "Q4_0":
        return quantize_q4_0(x)
    raise ValueError(f"gguf: tensor type must be one of {sorted(GGML_TYPES)}, got {ggml_type!r}")


class GGUFWriter:
    """Collects metadata and tensors, then streams the file: each tensor's data comes from its
    `produce()` (a float32 array of its shape) only while it is written, so a model never needs
    to be in memory at once."""

    def __init__(self, alignment=ALIGNMENT):
        self.alignment = alignment
        self.metadata = []  # (key, type, value)
        self.tensors = []  # (name, shape, ggml type, produce)

    def add(self, key, kind, value):
        self.metadata.append((key, kind, value))

    def add_tensor(self, name, shape, ggml_type, produce):
        shape = tuple(int(d) for d in shape)
        tensor_nbytes(ggml_type, shape)
        if any(name == t[0] for t in self.tensors):
            raise ValueError(f"gguf: tensor {name!r} added twice")
        self.tensors.append((name, shape, ggml_type, produce))

    def _pad(self, n):
        return -n % self.alignment

    def write(self, path):
        metadata = self.metadata
        if self.alignment != ALIGNMENT:
            metadata = metadata + [("general.alignment", UINT32, self.alignment)]
        head = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(metadata))]
        for key, kind, value in metadata:
            head += [_string(key), struct.pack("<I", kind), _value(kind, value)]
        offset = 0
        for name, shape, ggml_type, _ in self.tensors:
            # dims innermost first, as ggml's ne[]
            head += [_string(name), struct.pack("<I", len(shape)),
                     struct.pack(f"<{len(shape)}Q", *reversed(shape)),
                     struct.pack("<IQ", GGML_TYPES[ggml_type][0], offset)]
            size = tensor_nbytes(ggml_type, shape)
            offset += size + self._pad(size)
        header = b"".join(head)
        with open(path, "wb") as f:
            f.write(header + b"\0" * self._pad(len(header)))
            for name, shape, ggml_type, produce in self.tensors:
                x = np.asarray(produce(), dtype=np.float32)
                if x.shape != shape:
                    raise ValueError(f"gguf: tensor {name!r} produced shape {x.shape}, declared "
                                     f"{shape}")
                data = encode(ggml_type, x)
                f.write(data.tobytes())
                f.write(b"\0" * self._pad(data.size))


# --- The decoder's export -> a llama.cpp `llama` model ------------------------------------------

_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def read_safetensors(path):
    """{name: (shape, load)} over a memory map; load() returns the float32 array (bf16 widened on
    access)."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    base = 8 + header_len

    def load(info):
        begin, end = info["data_offsets"]
        if info["dtype"] not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{path}: tensor dtype {info['dtype']} is not supported")
        a = raw[base + begin:base + end].view(_SAFETENSORS_DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        return a.astype(np.float32, copy=False).reshape(info["shape"])

    return {name: (tuple(info["shape"]), lambda info=info: load(info))
            for name, info in header.items() if name != "__metadata__"}


def rotary_rows_to_gguf(w, heads):
    """Permutes a q or k projection's rows per head from the half-split rotary order (pairs i,
    i + d/2) to llama.cpp's adjacent pairs (2i, 2i + 1)."""
    n, k = w.shape
    d = n // heads
    return w.reshape(heads, 2, d // 2, k).swapaxes(1, 2).reshape(n, k)


def synthetic_vocab(size):
    """Tokens for a model without a real vocab: <unk>, <s>, </s>, the 256 byte tokens <0xXX> that
    llama.cpp's SentencePiece tokenizer falls back to, then placeholders."""
    if size < 259:
        raise ValueError(f"gguf: the synthetic vocab needs at least 259 tokens, got {size}")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256  # unknown, control, byte (llama_token_type)
    tokens += [f"t{i}" for i in range(len(tokens), size)]
    types += [1] * (size - len(types))  # normal
    scores = [0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(259, size)]
    return tokens, scores, types


def write_llama_gguf(export_dir, path, weight_type, name="tileops synthetic"):
    """export_dir's config.json + model.safetensors as a llama.cpp model in `path`: the matrices
    (embedding, projections, lm_head) in weight_type, the norms in F32."""
    with open(os.path.join(export_dir, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") != "llama":
        raise ValueError(f"gguf: only llama checkpoints convert (no q/k/v bias), got "
                         f"model_type {c.get('model_type')!r}")
    tensors = read_safetensors(os.path.join(export_dir, "model.safetensors"))
    heads, kv_heads, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    tokens, scores, types = synthetic_vocab(c["vocab_size"])
    w = GGUFWriter()
    for key, kind, value in [
            ("general.architecture", STRING, "llama"),
            ("general.name", STRING, name),
            ("general.file_type", UINT32, FILE_TYPES[weight_type]),
            ("llama.vocab_size", UINT32, c["vocab_size"]),
            ("llama.context_length", UINT32, c["max_position_embeddings"]),
            ("llama.embedding_length", UINT32, c["hidden_size"]),
            ("llama.block_count", UINT32, c["num_hidden_layers"]),
            ("llama.feed_forward_length", UINT32, c["intermediate_size"]),
            ("llama.attention.head_count", UINT32, heads),
            ("llama.attention.head_count_kv", UINT32, kv_heads),
            ("llama.attention.key_length", UINT32, d),
            ("llama.attention.value_length", UINT32, d),
            ("llama.rope.dimension_count", UINT32, d),
            ("llama.rope.freq_base", FLOAT32, c["rope_theta"]),
            ("llama.attention.layer_norm_rms_epsilon", FLOAT32, c["rms_norm_eps"]),
            ("tokenizer.ggml.model", STRING, "llama"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            ("tokenizer.ggml.scores", ARRAY, (FLOAT32, scores)),
            ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
            ("tokenizer.ggml.unknown_token_id", UINT32, 0),
            ("tokenizer.ggml.bos_token_id", UINT32, 1),
            ("tokenizer.ggml.eos_token_id", UINT32, 2),
            ("tokenizer.ggml.add_bos_token", BOOL, False),
            ("tokenizer.ggml.add_eos_token", BOOL, False)]:
        w.add(key, kind, value)

    def add(gguf_name, hf_name, ggml_type, permute_heads=0):
        shape, load = tensors[hf_name]
        w.add_tensor(gguf_name, shape, ggml_type,
                     lambda: rotary_rows_to_gguf(load(), permute_heads) if permute_heads
                     else load())

    add("token_embd.weight", "model.embed_tokens.weight", weight_type)
    for i in range(c["num_hidden_layers"]):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        add(g + "attn_norm.weight", p + "input_layernorm.weight", "F32")
        add(g + "attn_q.weight", p + "self_attn.q_proj.weight", weight_type, heads)
        add(g + "attn_k.weight", p + "self_attn.k_proj.weight", weight_type, kv_heads)
        add(g + "attn_v.weight", p + "self_attn.v_proj.weight", weight_type)
        add(g + "attn_output.weight", p + "self_attn.o_proj.weight", weight_type)
        add(g + "ffn_norm.weight", p + "post_attention_layernorm.weight", "F32")
        add(g + "ffn_gate.weight", p + "mlp.gate_proj.weight", weight_type)
        add(g + "ffn_up.weight", p + "mlp.up_proj.weight", weight_type)
        add(g + "ffn_down.weight", p + "mlp.down_proj.weight", weight_type)
    add("output_norm.weight", "model.norm.weight", "F32")
    if "lm_head.weight" in tensors:  # else llama.cpp ties output to token_embd
        add("output.weight", "lm_head.weight", weight_type)
    w.write(path)
