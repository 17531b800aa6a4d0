"""tileops.asc: the names asc2 programs take from pyasc's ``asc`` module, on tileops.

Kernel parameter annotations (``GlobalAddress``, ``ConstExpr[T]``), host-side tiling maths
(``ceildiv``), dtypes (``asc.float32``), the JIT option classes of the runtime API
(``CodegenOptions``, ``CompileOptions``, ``LaunchOptions``, ``KernelType``) and
``asc.runtime.config`` (backend and platform). A pyasc program ports by changing its imports to
``from tileops import asc`` and ``from tileops import asc2``; where tileops differs, and why, is
in docs/tile-language.md ("Coming from asc2").
"""

from tileops.tl import (ConstExpr, GlobalAddress, bfloat16, bool_, ceildiv, float16, float32,
                        float64, float8_e4m3fn, float8_e5m2, hifloat8, int8, int16, int32, int64,
                        uint8)
from tileops.asc._options import (CodegenOptions, CompileOptions, KernelType,  # noqa: F401
                                  LaunchOptions)
from tileops.asc import runtime  # noqa: F401

__all__ = ["ConstExpr", "GlobalAddress", "ceildiv", "CodegenOptions", "CompileOptions",
           "LaunchOptions", "KernelType", "runtime", "bool_", "int8", "int16", "int32", "int64",
           "uint8", "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
           "hifloat8"]
