"""tileops: LLM operators (add, rms_norm, softmax, ...) for torch tensors and numpy arrays.

Operators live in :mod:`tileops.ops`; they take CPU tensors without copying them (any
non-negative strides) and return the output they allocate when ``out`` is omitted. Kernels of
your own are written in the tile language, :mod:`tileops.tl` (``@tl.jit``); pyasc asc2 programs
run by importing :mod:`tileops.asc2` and :mod:`tileops.asc` instead of pyasc's modules.
``import tileops.torch_ops`` registers the operators as ``torch.ops.tileops.*`` (PyTorch custom
operators, vLLM's forms; not imported here: it imports torch).
"""

import os as _os

# A build other than the README's Release one keeps its extension in its own folder
# (python/CMakeLists.txt); TILEOPS_EXTENSION_DIR names it and is searched first.
if _os.environ.get("TILEOPS_EXTENSION_DIR"):
    __path__.insert(0, _os.environ["TILEOPS_EXTENSION_DIR"])

try:
    from tileops import _C
except ImportError as _error:
    raise ImportError(
        f"tileops: the compiled extension tileops._C is missing or does not load ({_error}); "
        "build it with scripts/setup.sh release (it writes python/tileops/_C*.so), or set "
        "TILEOPS_EXTENSION_DIR to the python/tileops folder of another build") from _error
from tileops import ops
from tileops import tl
from tileops import asc
from tileops import asc2

__version__ = _C.__version__

__all__ = ["ops", "tl", "asc", "asc2", "__version__"]
