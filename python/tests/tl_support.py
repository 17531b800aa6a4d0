"""Helpers of the tileops.tl tests: numpy-and-torch launches, poisoned outputs, tolerances."""

import numpy as np
import torch

CORE_NUMS = (1, 3, 16)
# |got - ref| <= tol + tol * |ref| against float64 references computed from the rounded inputs.
TOL = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "int32": 0}
NP = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "int32": np.int32}


def rand(shape, dtype, seed, low=-2.0, high=2.0):
    """Random data of `dtype` (a name) as numpy, or torch for bfloat16 (numpy has none)."""
    rng = np.random.default_rng(seed)
    data = rng.uniform(low, high, size=shape)
    if dtype == "int32":
        return rng.integers(-1000, 1000, size=shape).astype(np.int32)
    if dtype == "bfloat16":
        return torch.from_numpy(data).to(torch.bfloat16)
    return data.astype(NP[dtype])


def poisoned(shape, dtype):
    """An output filled with NaN (or a sentinel for ints), so unwritten elements show."""
    if dtype == "bfloat16":
        return torch.full(shape, float("nan"), dtype=torch.bfloat16)
    if dtype == "int32":
        return np.full(shape, -12345, np.int32)
    return np.full(shape, np.nan, NP[dtype])


def f64(a):
    """float64 numpy copy of a numpy array or torch tensor (for references)."""
    return a.double().numpy() if isinstance(a, torch.Tensor) else np.asarray(a, np.float64)


def to_torch(a):
    """A torch tensor holding a copy of a numpy array (torch arguments stay torch)."""
    return torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a


def launch_both(launch, *args):
    """Runs launch(*args) with the numpy arrays of `args`, then with torch copies of them, and
    checks every array ends bit-for-bit identical. Returns the numpy arrays after the launch.
    Arguments that are torch tensors already (bfloat16) run in both launches as given copies."""
    np_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    torch_args = [to_torch(a) if isinstance(a, np.ndarray) else
                  (a.clone() if isinstance(a, torch.Tensor) else a) for a in args]
    launch(*np_args)
    launch(*torch_args)
    for i, (a, t) in enumerate(zip(np_args, torch_args)):
        if isinstance(a, np.ndarray):
            assert a.tobytes() == t.numpy().tobytes(), f"argument {i}: numpy and torch differ"
        elif isinstance(a, torch.Tensor):
            assert torch.equal(a.view(torch.int16), t.view(torch.int16)), f"argument {i}"
    return np_args


def check(got, ref, dtype, tol_scale=1.0):
    """Every element of `got` (numpy or torch) within the dtype's tolerance of float64 `ref`."""
    tol = TOL[dtype] * tol_scale
    g = f64(got)
    assert g.shape == np.shape(ref)
    err = np.abs(g - ref)
    bound = tol + tol * np.abs(ref)
    bad = ~(err <= bound)  # NaN (an unwritten lane) is bad
    assert not bad.any(), f"{bad.sum()} bad elements, max error {np.nanmax(err)} (tol {tol})"
