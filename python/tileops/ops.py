"""tileops operators: the C++ bindings of ``tileops._C.ops``, re-exported without wrappers.

Every operator takes its inputs, then attributes, then outputs (``out`` may be omitted: it is
allocated as the first input's kind, torch or numpy, and returned), plus the keyword-only
``implementation_index=`` and ``stream=`` (None on the CPU). Class forms (``RmsNorm``, ...)
specialise an operator once for a geometry and run it on new data with ``__call__``.
Errors: ValueError (bad argument), TypeError (bad dtype or Python type), NotImplementedError
(unsupported here), MemoryError, RuntimeError (internal).
"""

from tileops._C import ops as _ops

# Everything tileops._C.ops defines (generated from the operator declarations, plus the
# hand-written bindings), under the same names.
__all__ = sorted(name for name in dir(_ops) if not name.startswith("_"))
globals().update({name: getattr(_ops, name) for name in __all__})
