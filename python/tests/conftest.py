"""Shared helpers: dtypes, layouts and tolerances of the tileops Python tests."""

import os

import pytest
import torch

from tileops import ops


def pytest_collection_modifyitems(config, items):
    """TILEOPS_PYTEST_SHARD=i/n (CTest's python/pytest_iofn) keeps the i-th of n shards: the test
    files sorted by path and dealt round-robin."""
    shard = os.environ.get("TILEOPS_PYTEST_SHARD")
    if not shard:
        return
    try:
        index, count = (int(part) for part in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"TILEOPS_PYTEST_SHARD={shard!r}: expected i/n, e.g. 1/3")
    if not 1 <= index <= count:
        raise pytest.UsageError(f"TILEOPS_PYTEST_SHARD={shard!r}: expected 1 <= i <= n")
    files = sorted({str(item.path) for item in items})
    mine = {f for position, f in enumerate(files) if position % count == index - 1}
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


def poisoned(shape, dtype, layout="contiguous"):
    """An output full of NaN (or -7 for integers), strided when asked."""
    fill = float("nan") if dtype.is_floating_point else -7
    wide = list(shape)
    if layout == "strided":
        wide[-1] *= 2
    out = torch.full(wide, fill, dtype=dtype)
    return out[..., ::2] if layout == "strided" else out
