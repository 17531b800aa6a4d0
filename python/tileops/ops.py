"""tileops operators: the C++ bindings of ``tileops._C.ops``, re-exported without wrappers.

Every operator takes its inputs, then attributes, then outputs (``out`` may be omitted: it is
allocated as the first input's kind, torch or numpy, and returned), plus the keyword-only
``implementation_index=`` and ``stream=`` (None on the CPU). Class forms (``RmsNorm``, ...)
specialise an operator once for a geometry and run it on new data with ``__call__``.
Errors: ValueError (bad argument), TypeError (bad dtype or Python type), NotImplementedError
(unsupported here), MemoryError, RuntimeError (internal).
"""

from tileops._C.ops import (
    Gemm,
    Linear,
    Matmul,
    gemm,
    linear,
    matmul,
)
specialise an operator once for a geometry and run it on new data with ``__call__``.
Errors: ValueError (bad argument), TypeError (bad dtype or Python type), NotImplementedError
(unsupported here), MemoryError, RuntimeError (internal).
"""

from tileops._C.ops import (
    Add,
    AddRmsNorm,
    Cast,
    Cat,
    CausalSoftmax,
    Embedding,
    Mul,
    RmsNorm,
    ScaledSoftmax,
    SiluAndMul,
    Swiglu,
    active_implementation_indices,
    active_implementation_names,
    add,
    add_rms_norm,
    cache_size,
    cast,
    cat,
    causal_softmax,
    clear_cache,
    embedding,
    mul,
    registered_operators,
    rms_norm,
    scaled_softmax,
    silu_and_mul,
    swiglu,
)

__all__ = [
    "Gemm",
    "Linear",
    "Matmul",
    "gemm",
    "linear",
    "matmul",
]
