"""Shared helpers: dtypes, layouts and tolerances of the tileops Python tests."""

import os

import pytest
import torch

from tileops import ops


# Seconds the slowest test files took in a fresh-clone CI run (2 cores, cold JIT cache; most of
# it compiling tl kernels), so that the shards get even shares; other files count 1.
FILE_SECONDS = {"test_vllm_paged.py": 80, "test_attention.py": 65, "test_ops.py": 39,
                "test_catalog.py": 17, "test_flash_attention_lse.py": 13, "test_tl_golden.py": 12,
                "test_author_workflow.py": 8, "test_tl_ops.py": 7}


def pytest_collection_modifyitems(config, items):
    """TILEOPS_PYTEST_SHARD=i/n (CTest's python/pytest_iofn) keeps the i-th of n shards: the test
    files, costliest first (FILE_SECONDS, then by path), each dealt to the shard with the least
    seconds so far. Round-robin by path had put both paged-attention files in one shard: 330 s
    against 30 s for each of the others."""
    shard = os.environ.get("TILEOPS_PYTEST_SHARD")
    if not shard:
        return
    try:
        index, count = (int(part) for part in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"TILEOPS_PYTEST_SHARD={shard!r}: expected i/n, e.g. 1/3")
    if not 1 <= index <= count:
        raise pytest.UsageError(f"TILEOPS_PYTEST_SHARD={shard!r}: expected 1 <= i <= n")
    cost = lambda f: FILE_SECONDS.get(os.path.basename(f), 1)  # noqa: E731
    files = sorted({str(item.path) for item in items}, key=lambda f: (-cost(f), f))
    load = [0] * count
    mine = set()
    for f in files:
        lightest = load.index(min(load))
        load[lightest] += cost(f)
        if lightest == index - 1:
            mine.add(f)
    kept = [item for item in items if str(item.path) in mine]
    config.hook.pytest_deselected(items=[item for item in items if str(item.path) not in mine])
    items[:] = kept

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
# abs + rel tolerance per dtype: |got - ref| <= tol + tol * |ref|.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2,
             torch.int32: 0, torch.int64: 0}
LAYOUTS = ["contiguous", "strided"]


def make(shape, dtype, layout="contiguous", low=-2.0, high=2.0, seed=0):
    """A random tensor; "strided" is every other element of a wider buffer along the last dim."""
    gen = torch.Generator().manual_seed(seed + len(shape) * 7919)
    wide = list(shape)
    if layout == "strided" and wide:
        wide[-1] *= 2
    if dtype.is_floating_point:
        base = (torch.rand(wide, generator=gen) * (high - low) + low).to(dtype)
    else:
        base = torch.randint(int(low), int(high) + 1, wide, generator=gen, dtype=dtype)
    return base[..., ::2] if layout == "strided" and wide else base


def assert_close(got, ref, dtype):
    """Checks got against a float reference with the dtype's tolerance."""
    tol = TOLERANCE[dtype]
    got = torch.as_tensor(got).double()
    ref = ref.double()
    assert got.shape == ref.shape
    err = (got - ref).abs()
    bound = tol + tol * ref.abs()
    assert bool((err <= bound).all()), f"max error {err.max().item()} (tol {tol})"


def indices(op):
    """The implementation indices of `op` on the CPU."""
    return ops.active_implementation_indices(op, device="cpu")


def params(op, dtypes=FLOATS):
    """dtype x implementation index x layout."""
    return pytest.mark.parametrize(
        "dtype,index,layout",
        [(d, i, l) for d in dtypes for i in indices(op) for l in LAYOUTS])


def spread(impls, *axes):
    """(impl, a, b, ...) tuples: every combination of the axes for the first implementation
    (native), and for each other one (tl) every axis value once, taken along the diagonal. Each
    combination is a tl kernel specialisation, a JIT compile of several seconds in a fresh cache
    (CI's), and the C++ operator tests run tl over their own grids."""
    every = [()]
    for axis in axes:
        every = [c + (v,) for c in every for v in axis]
    return [(impl,) + c for n, impl in enumerate(impls) for c in (diagonal(*axes) if n else every)]


def diagonal(*axes):
    """Tuples that take each value of every axis once (the shorter axes cycle)."""
    return [tuple(axis[i % len(axis)] for axis in axes) for i in range(max(map(len, axes)))]


def poisoned(shape, dtype, layout="contiguous"):
    """An output full of NaN (or -7 for integers), strided when asked."""
    fill = float("nan") if dtype.is_floating_point else -7
    wide = list(shape)
    if layout == "strided":
        wide[-1] *= 2
    out = torch.full(wide, fill, dtype=dtype)
    return out[..., ::2] if layout == "strided" else out
