"""What every catalog test shares: the entry, backends and shapes to run, random inputs with
non-contiguous strides, poisoned outputs and the tolerance check."""

import contextlib
import json
import math
import os
from pathlib import Path

import numpy as np
import torch

from tileops.asc.runtime import config

BACKENDS = ("interp", "cpu")
# The asc2 platform that selects each backend (Model: the simulator -> interp; NPU -> cpu).
_PLATFORM = {"interp": "Model", "cpu": "NPU"}


def load_entry(test_file):
    """The entry.json next to ``test_file``."""
    return json.loads((Path(test_file).parent / "entry.json").read_text(encoding="utf-8"))


def selected_backends():
    """$TILEOPS_CATALOG_BACKENDS (comma list), else $TILEOPS_TL_BACKEND (what `tileops verify`
    sets), else both."""
    raw = os.environ.get("TILEOPS_CATALOG_BACKENDS") or os.environ.get("TILEOPS_TL_BACKEND")
    chosen = tuple(b.strip() for b in raw.split(",") if b.strip()) if raw else BACKENDS
    unknown = [b for b in chosen if b not in BACKENDS]
    if unknown:
        raise ValueError(f"TILEOPS_CATALOG_BACKENDS: unknown backend(s) {unknown}; expected "
                         f"a comma list of {', '.join(BACKENDS)}")
    return chosen


def large_enabled():
    return os.environ.get("TILEOPS_CATALOG_LARGE", "") not in ("", "0")


def cases(entry):
    """(backend, shape, dtype) triples to test: interp runs the entry's small shapes, cpu its
    validated shapes; the large ones only with TILEOPS_CATALOG_LARGE=1. Every dtype runs on the
    first shape of each list, the first dtype on the others (the time budget)."""
    v = entry["validated"]
    out = []
    for backend in selected_backends():
        shapes = list(v["shapes"]["interp" if backend == "interp" else "cpu"])
        if backend == "cpu" and large_enabled():
            shapes += v["shapes"].get("large", [])
        for i, shape in enumerate(shapes):
            for dtype in (v["dtypes"] if i == 0 else v["dtypes"][:1]):
                out.append((backend, tuple(shape), dtype))
    return out


def case_id(case):
    backend, shape, dtype = case
    return f"{backend}-{'x'.join(map(str, shape))}-{dtype}"


@contextlib.contextmanager
def on_backend(backend):
    """Runs asc2 kernels on ``backend`` inside the block (they read the platform per launch)."""
    previous = config.get_backend(), config.get_platform()
    config.set_platform(_PLATFORM[backend])
    try:
        yield
    finally:
        if previous[0] is None:
            config.reset()
        else:
            config.set_platform(*previous)


def dtype_of(name):
    return getattr(torch, name)


def strided(shape, dtype, seed, scale=1.0, kind="pad"):
    """A random tensor of ``shape`` that is not contiguous: ``pad`` views every row of a wider
    buffer (row stride > last extent), ``swap`` is the [S, BH, D] -> [BH, S, D] view of a
    transposed buffer. Values are normal * scale, rounded to ``dtype``."""
    gen = torch.Generator().manual_seed(seed)
    if kind == "swap" and len(shape) == 3:
        base = torch.randn((shape[1], shape[0], shape[2]), generator=gen, dtype=torch.float64)
        return (base * scale).to(dtype).transpose(0, 1)
    wide = list(shape[:-1]) + [shape[-1] + 8]
    base = torch.randn(wide, generator=gen, dtype=torch.float64)
    return (base * scale).to(dtype)[..., : shape[-1]]


def coded(shape, encode, seed, scale=1.0, kind="pad"):
    """uint8 codes of an 8-bit float format (torch 1.13 has none) with strided()'s layout and
    values: ``encode`` maps float64 numpy values to codes (rounding them onto the format's grid)."""
    view = strided(shape, torch.float64, seed, scale, kind)
    base = torch.from_numpy(encode(view._base.numpy()))
    return base.as_strided(view.shape, view.stride(), view.storage_offset())


def poisoned(shape, dtype=torch.float32):
    """A NaN-filled output that is a strided view of a wider NaN buffer: the kernel must write
    every element of the view and nothing of the padding (check_untouched)."""
    wide = list(shape[:-1]) + [shape[-1] + 3]
    return torch.full(wide, math.nan, dtype=dtype)[..., : shape[-1]]


def check_untouched(view):
    """The padding of a poisoned() view still holds NaN (nothing was written past the view)."""
    base = view._base if view._base is not None else view
    pad = base[..., view.shape[-1]:]
    assert bool(torch.isnan(pad.double()).all()), "the kernel wrote past its output's rows"


def f64(t):
    return t.detach().to(torch.float64).numpy()


def assert_close(name, got, ref, tol):
    """|got - ref| <= tol + tol * |ref| everywhere, and got is finite where ref is."""
    got = f64(got)
    assert got.shape == ref.shape, f"{name}: shape {got.shape}, expected {ref.shape}"
    assert np.isfinite(got).all(), f"{name}: {int((~np.isfinite(got)).sum())} non-finite values"
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=name)


def check_row_stats_kernel(kernel, reference, tolerances, backend, q, k, v, visible=None):
    """Runs a forward kernel with (out, rowmax, rowsum) outputs, kernel(q, k, v, None, *outs), on
    all of k and v and checks each output against reference(q, k, v) on their first ``visible``
    keys (the causal kernels' tests put NaN past them), with the entry's tolerance per name."""
    bh, s1, d = q.shape
    outs = poisoned((bh, s1, d)), poisoned((bh, s1)), poisoned((bh, s1))
    with on_backend(backend):
        kernel(q, k, v, None, *outs)
    wants = reference(q, k[:, :visible], v[:, :visible])
    for name, got, want in zip(("out", "rowmax", "rowsum"), outs, wants):
        assert_close(name, got, want, tolerances[name])
        check_untouched(got)
