"""tileops: LLM operators (add, rms_norm, softmax, ...) for torch tensors and numpy arrays.

Operators live in :mod:`tileops.ops`; they take CPU tensors without copying them (any
non-negative strides) and return the output they allocate when ``out`` is omitted.
"""

from tileops import _C
from tileops import ops

__version__ = _C.__version__

__all__ = ["ops", "__version__"]
