#!/usr/bin/env python3
"""Writes the hand-made seed inputs of fuzz/corpus/ (re-run after changing a decoder).

Each harness decodes its bytes field by field and reads 0 past the end, so a seed is the few
leading bytes that choose an operator and its shapes; zeros mean "plain" (contiguous, no
mutation). Regression inputs (finding-*) are kept as found, not written here.
"""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"


def write(target, name, data):
    path = ROOT / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))


# framework_fuzz: byte 0 picks the case (mod 9).
F32, F16, BF16, I32, I64 = 0, 1, 2, 3, 4
write("framework", "geometry-valid", [0, 2, 0, 3, 1, 4, 8])
write("framework", "geometry-raw-int64", [0, 3, 1] + [0xFF] * 7 + [0x7F] + [2] + [0] * 7 + [1] * 16)
write("framework", "geometry-hostile", [0, 2, 0, 250, 3, 17, 201, 8])
write("framework", "add-f32", [1, 2, 3, 5, F32])
write("framework", "add-broadcast-i32", [1, 2, 4, 6, 3, 3, 0, 0, 3])
write("framework", "add-strided-f16", [1, 3, 2, 3, 17, F16, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 5])
write("framework", "mul-i64", [2, 1, 9, 4])
write("framework", "mul-bf16-empty", [2, 2, 0, 7, 2])
write("framework", "rms-norm-f32", [3, 1, 4, 16, 0, 0])
write("framework", "rms-norm-bad-eps", [3, 1, 2, 8, 0, 3])
write("framework", "linear-f32", [4, 3, 5, 16, 0, 1])
write("framework", "linear-bf16-bias", [4, 2, 17, 9, 2, 1])
write("framework", "linear-packed-f32", [5, 2, 17, 8, 0, 0])
write("framework", "linear-packed-bf16", [5, 1, 3, 7, 2, 0])
write("framework", "packed-numel", [6, 0, 5, 0, 9, 7])
write("framework", "packed-numel-raw", [6, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 8])
write("framework", "cat-dim0", [7, 2, 3, 4, 3, 8, 2, 1, 3])
write("framework", "cat-negative-dim", [7, 3, 2, 3, 4, 0, 1, 1, 2])
write("framework", "flash-attention", [8, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 1, 0, 0])
write("framework", "flash-attention-causal-gqa", [8, 1, 1, 0, 1, 0, 1, 0, 0, 12, 9, 2, 0, 1])
write("framework", "flash-attention-paged", [8, 0, 0, 0, 0, 0, 0, 0, 0, 6, 10, 0, 1, 0, 0, 3, 2, 1])

# c_api_fuzz: byte 0 picks the call (mod 6), then rank, extents and dtype of the base shape.
write("c_api", "add-f32", [0, 2, 3, 4, 0])
write("c_api", "add-odd-ndim", [0, 1, 5, 0, 0, 250])
write("c_api", "add-null-shape", [0, 1, 5, 0, 0, 0, 0, 0, 31])
write("c_api", "cast-f16", [1, 2, 2, 3, 1])
write("c_api", "cast-bad-dtype", [1, 1, 4, 0, 0, 0, 250, 3])
write("c_api", "rms-norm-bf16", [2, 2, 3, 8, 2])
write("c_api", "rms-norm-strided", [2, 2, 3, 8, 0, 0, 0, 0, 0, 1, 4])
write("c_api", "cat-f32", [3, 2, 3, 2, 0, 4])
write("c_api", "cat-hostile-extent", [3, 2, 250, 0, 2, 0, 4])
write("c_api", "pack-linear", [4, 0, 0, 17, 5])
write("c_api", "pack-linear-bf16", [4, 0, 2, 9, 7])
write("c_api", "packed-numel-raw", [5, 0, 0] + [0xFF] * 7 + [0x3F] + [3] + [0] * 7 + [7, 0, 0, 0])

# loader_fuzz: byte 0 even = a .safetensors file, odd = a config.json text.
import json
import struct


def safetensors(header, data=b"", raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return [0] + list(struct.pack("<Q", len(text)) + text + data)


two = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
       "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]},
       "__metadata__": {"format": "pt"}}
write("loader", "st-valid", safetensors(two, bytes(range(22))))
write("loader", "st-empty-tensor", safetensors({"e": {"dtype": "I64", "shape": [0, 5], "data_offsets": [0, 0]}}))
write("loader", "st-overlap", safetensors({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)))
write("loader", "st-negative-dims", safetensors({"a": {"dtype": "F32", "shape": [-4, -4], "data_offsets": [0, 64]}}, bytes(64)))
write("loader", "st-huge-zero-bytes", safetensors({"a": {"dtype": "F32", "shape": [2**32, 2**32, 4], "data_offsets": [0, 0]}}))
write("loader", "st-rank9", safetensors({"a": {"dtype": "U8", "shape": [1] * 9, "data_offsets": [0, 1]}}, b"x"))
write("loader", "st-header-too-long", [0] + list(struct.pack("<Q", 2**63 + 5) + b"{}"))
write("loader", "st-not-object", safetensors(None, raw_header=b"[1, 2, 3]"))
config = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
          "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
          "model_type": "llama", "hidden_act": "silu", "tie_word_embeddings": False}
write("loader", "config-valid", [1] + list(json.dumps(config).encode()))
write("loader", "config-qwen2", [1] + list(json.dumps(dict(config, model_type="qwen2", head_dim=16)).encode()))
write("loader", "config-zero-heads", [1] + list(json.dumps(dict(config, num_attention_heads=0)).encode()))
write("loader", "config-huge-positions", [1] + list(json.dumps(dict(config, max_position_embeddings=2**60)).encode()))
write("loader", "config-not-object", [1] + list(b"[64, 2]"))
write("loader", "config-big-int", [1] + list(b'{"hidden_size": 18446744073709551616, "num_hidden_layers": 1e400}'))

# dlpack_fuzz: rank, dtype index, [device], extents, shape-NULL, stride mode, ...
write("dlpack", "f32-2d", [2, 0, 0, 3, 4, 0, 0])
write("dlpack", "bf16-strided", [2, 2, 0, 5, 6, 0, 2])
write("dlpack", "i64-raw-strides", [3, 5, 0, 2, 3, 4, 0, 3, 1, 250, 7])
write("dlpack", "negative-size1-stride", [2, 0, 0, 1, 4, 0, 2, 1])
write("dlpack", "hostile-extent", [2, 1, 0, 250, 4, 3, 0, 1])
write("dlpack", "byte-offset", [1, 0, 0, 8, 0, 1, 7, 3, 1])
write("dlpack", "read-only-output", [1, 0, 0, 8, 0, 1, 0, 1, 7])
write("dlpack", "bad-rank", [250, 0, 0])

# cache_fuzz: mode (0 raw metadata, 1 genuine, 2-3 edited), key size, object size / 4, key,
# ELF or not (3), object, then the metadata or the edit.
write("cache", "genuine", [1, 5, 2] + list(b"add_f") + [0] + list(range(8)))
write("cache", "edited", [2, 5, 2] + list(b"add_f") + [0] + list(range(8)) + [40, 0, 0x41])
write("cache", "raw", [0, 3, 1] + list(b"key") + [0] + list(b"abcd") +
      list(b"tileops-tl-cpu 2\nkey key\nsize 8\nsha256 00\n"))
write("cache", "not-elf", [1, 3, 1] + list(b"key") + [3] + list(b"abcd"))
