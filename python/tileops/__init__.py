"""tileops: LLM operators (add, rms_norm, softmax, ...) for torch tensors and numpy arrays.

Operators live in :mod:`tileops.ops`; they take CPU tensors without copying them (any
non-negative strides) and return the output they allocate when ``out`` is omitted. Kernels of
your own are written in the tile language, :mod:`tileops.tl` (``@tl.jit``).
"""

from tileops import _C
from tileops import ops
from tileops import tl

__version__ = _C.__version__

__all__ = ["ops", "tl", "__version__"]
