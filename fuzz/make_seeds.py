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
