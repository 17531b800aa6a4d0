"""``tileops new NAME``: a kernel project that passes ``tileops check`` and ``tileops verify`` as
generated: NAME/kernel.py (a @tl.jit kernel, its launch function and a host driver that checks
it against numpy), NAME/test_NAME.py (pytest against numpy on interp and cpu), NAME/README.md."""

import keyword
import os
import sys

KERNEL = '''"""{name}: y = alpha * x + b, tile by tile; the blocks stride over the tiles.

Run: python kernel.py [--backend interp|cpu|auto]  (checks the result against numpy)
"""

import argparse

import numpy as np

from tileops import tl

TILE = 256  # elements per tile: a ConstExpr, so every tile shape is static
CORE_NUM = 4  # blocks per launch (0 would take every core)


@tl.jit
def {name}_kernel(x: tl.GlobalAddress, b: tl.GlobalAddress, y: tl.GlobalAddress,
        n: int, alpha: float, tile: tl.ConstExpr[int]):
    tx, tb, ty = tl.tensor(x, [n]), tl.tensor(b, [n]), tl.tensor(y, [n])
    for i in tl.range(tl.block_idx(), tl.ceildiv(n, tile), tl.block_num()):
        # The last tile may be partial: out-of-bounds lanes load 0 and are never stored.
        xs = tl.load(tx, [tile], offsets=[i * tile])
        bs = tl.load(tb, [tile], offsets=[i * tile])
        tl.store(xs * alpha + bs, ty, offsets=[i * tile])


_KERNELS = {{"auto": {name}_kernel}}


def launch(x, b, alpha, backend="auto"):
    """y = alpha * x + b for 1-D float32 arrays of one length, on `backend`."""
    if backend not in _KERNELS:
        _KERNELS[backend] = tl.jit(backend=backend)({name}_kernel.fn)
    y = np.empty_like(x)
    _KERNELS[backend][CORE_NUM](x, b, y, x.size, alpha, TILE)
    return y


def reference(x, b, alpha):
    return (alpha * x.astype(np.float64) + b).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="auto", choices=["auto", "interp", "cpu"])
    parser.add_argument("--n", type=int, default=1000, help="elements (not a multiple of TILE)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(args.n).astype(np.float32)
    b = rng.standard_normal(args.n).astype(np.float32)
    y = launch(x, b, 1.5, args.backend)
    np.testing.assert_allclose(y, reference(x, b, 1.5), rtol=1e-6, atol=1e-6)
    print(f"{name}: {{args.n}} elements on {{args.backend}}: PASS")


if __name__ == "__main__":
    main()
'''

TEST = '''"""{name} against numpy on each backend (TILEOPS_TL_BACKEND, set by `tileops verify`,
selects one; by default both run)."""

import os
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import kernel  # noqa: E402 - the kernel next to this test

BACKENDS = [os.environ["TILEOPS_TL_BACKEND"]] if os.environ.get("TILEOPS_TL_BACKEND") else [
    "interp", "cpu"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, kernel.TILE - 1, kernel.TILE, 3 * kernel.TILE + 17])
def test_{name}(backend, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    y = kernel.launch(x, b, -0.75, backend)
    np.testing.assert_allclose(y, kernel.reference(x, b, -0.75), rtol=1e-6, atol=1e-6)
'''

README = '''# {name}

A tile-language kernel made by `tileops new {name}`: `y = alpha * x + b`.

- `kernel.py`: the `@tl.jit` kernel, `launch()` and a host driver (`python kernel.py`) that
  checks the result against numpy.
- `test_{name}.py`: pytest against numpy on the `interp` and `cpu` backends.

The workflow (docs/author-workflow.md of tileops):

    tileops env                      # compiler, cache, SIMD targets, backends
    tileops check kernel.py          # static checks, nothing runs
    tileops verify kernel.py         # check, then the tests on interp and cpu;
                                     # writes verification.md and verification.json
'''


def scaffold(name, parent=""):
    """Writes the project; returns its directory. Raises ValueError for a bad name or an existing
    directory."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"NAME must be a Python identifier (letters, digits, _; not a keyword), "
                         f"got {name!r}")
    root = os.path.join(parent, name)
    if os.path.lexists(root):
        raise ValueError(f"{root} already exists; choose another NAME or remove it")
    os.makedirs(root)
    files = {"kernel.py": KERNEL, f"test_{name}.py": TEST, "README.md": README}
    for file, template in files.items():
        with open(os.path.join(root, file), "w", encoding="utf-8") as f:
            f.write(template.format(name=name))
    return root


def main(args):
    if len(args) != 1 or args[0].startswith("-"):
        print("tileops new: expected one NAME (usage: tileops new NAME)", file=sys.stderr)
        return 2
    try:
        root = scaffold(args[0])
    except (ValueError, OSError) as e:
        print(f"tileops new: {e}", file=sys.stderr)
        return 1
    print(f"tileops new: wrote {root}/kernel.py, {root}/test_{args[0]}.py, {root}/README.md\n"
          f"next: tileops check {root}/kernel.py && tileops verify {root}/kernel.py")
    return 0
