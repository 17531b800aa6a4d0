"""tileops.asc2: pyasc's asc2 tile API on tileops.tl, so that an asc2 program runs by changing
its imports (``from tileops import asc2``, ``from tileops import asc``).

Every name of tileops.tl is here (load, store, tensor, full, zeros, range, static_range,
block_idx, block_num, the math, reductions, matmul, softmax, dtypes, ...). What asc2 adds:

- ``asc2.jit`` takes every option of asc's runtime API by name (``@asc2.jit(always_compile=True,
  opt_level=2)``) or as ``asc.CodegenOptions`` / ``asc.CompileOptions`` / ``asc.LaunchOptions``
  objects given positionally (``@asc2.jit(asc.CompileOptions(debug=True))``); unknown names are
  TypeErrors listing the known ones. Options without a CPU meaning are accepted and change
  nothing (docs/tile-language.md lists each).
- Unannotated kernel parameters take their kind from each launch's arguments: arrays, torch
  tensors and DLPack objects are global addresses, ints runtime ints, floats runtime floats,
  bools runtime bools; ``asc.ConstExpr`` stays an annotation. numpy scalars count as the Python
  numbers they hold, in runtime arguments and in ConstExprs alike (np.int64(4) selects the
  trace of 4).
- Integer ``/`` truncates inside asc2 kernels, as asc2's does (tileops.tl's ``/`` on integers
  is true division).
- ``capture_exceptions`` (default True): an exception that is not already a located tileops
  trace error is re-raised as ``asc2.KernelError`` (a RuntimeError, like asc2's) naming the
  kernel's file:line, the original chained as its cause; False lets it propagate unchanged.
- The kernel runs on the backend ``asc.runtime.config.set_platform`` selects (Model -> interp,
  NPU -> cpu) unless its decorator says ``backend=``.
"""

import functools
import os
import re
import sys
import traceback

from tileops import tl as _tl
from tileops.tl import *  # noqa: F401,F403  (the asc2 names are tileops.tl's)
from tileops.asc import ConstExpr, GlobalAddress  # noqa: F401
from tileops.asc import _options
from tileops.asc._options import CodegenOptions, CompileOptions, LaunchOptions
from tileops.asc.runtime import config as _config


class KernelError(RuntimeError):
    """An exception raised while tracing an asc2 kernel (capture_exceptions=True), located at
    the kernel's line; ``__cause__`` is the original exception."""


_int_division = _tl._int_division


_LOCATED = re.compile(r"^tl: [^\s:]+:\d+: ")


def _located(error):
    """Whether ``error`` is one of tileops' own trace errors, which name file:line already."""
    if isinstance(error, (_tl.TraceError, _tl.TraceTypeError)):
        return True
    return bool(_LOCATED.match(str(error)))


def _kernel_line(fn, error):
    """'file.py:LINE' of the innermost traceback frame in the kernel's source file."""
    file = fn.__code__.co_filename
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == file:
            line = lineno
    return f"{os.path.basename(file)}:{line if line is not None else fn.__code__.co_firstlineno}"


def _python_numbers(value):
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    if type(value) in (tuple, list):
        return type(value)(_python_numbers(v) for v in value)
    return value


class JitFunction(_tl.JitFunction):
    """An @asc2.jit kernel: a tl kernel with asc2's parameter kinds, division, options and
    backend selection."""

    def __init__(self, fn, tl_options, capture_exceptions, core_num):
        self._capture = capture_exceptions
        self._default_core_num = core_num
        self._fixed_backend = "backend" in tl_options
        super().__init__(fn, tl_options, infer_kinds=True)

    def _trace_body(self):
        trace, fn, capture = self._trace, self.fn, self._capture

        def body(values):
            with _int_division("trunc"):
                try:
                    trace(values)
                except Exception as e:  # noqa: BLE001 - re-raised, located or unchanged
                    if not capture or _located(e):
                        raise
                    raise KernelError(f"asc2: {_kernel_line(fn, e)}: in kernel '{fn.__name__}':"
                                      f" {type(e).__name__}: {e}") from e
        return body

    def _constexpr_value(self, value, type_):
        # asc2 treats numpy scalars as the Python numbers they hold, in tuples too (shapes made
        # with np.prod): np.int64(4) and 4 select one trace.
        return super()._constexpr_value(_python_numbers(_tl._shape_tuple(value)), type_)

    def _option_overrides(self):
        backend = None if self._fixed_backend else _config.tileops_backend()
        return (("backend", backend),) if backend is not None else ()

    def __getitem__(self, launch):
        if isinstance(launch, LaunchOptions):
            launch = (launch.core_num, launch.stream)
        return super().__getitem__(launch)

    def __call__(self, *args, **kwargs):
        if _tl.tracing():  # a sub-kernel: inlined with asc2's division
            with _int_division("trunc"):
                return self._inline(*args, **kwargs)
        return self.launch(self._default_core_num, *args, **kwargs)


def _merge(objects, keywords):
    """The options of the decorator: option objects' explicit fields, then keywords; an option
    given twice with different values is an error."""
    merged, origin = {}, {}
    for obj in objects:
        if not isinstance(obj, (CodegenOptions, CompileOptions, LaunchOptions)):
            raise TypeError(f"asc2.jit: positional arguments must be asc.CodegenOptions, "
                            f"asc.CompileOptions or asc.LaunchOptions, got {obj!r}")
        for name, value in obj.given().items():
            if name in merged and merged[name] != value:
                raise TypeError(f"asc2.jit: option '{name}' given twice ({origin[name]} and "
                                f"{obj!r})")
            merged[name], origin[name] = value, repr(obj)
    for name, value in keywords.items():
        value = _options.check("asc2.jit", name, value)
        if name in merged and merged[name] != value:
            raise TypeError(f"asc2.jit: option '{name}' given twice ({origin[name]} and "
                            f"{name}={value!r})")
        merged[name] = value
    return merged


def _make(fn, settings):
    tl_options = {}
    for name, value in settings.items():
        target = _options.ALL[name][2]
        if target is not None and value is not None:
            tl_options[target] = list(value) if name == "bisheng_options" else value
    capture = settings.get("capture_exceptions", True)
    return JitFunction(fn, tl_options, capture, settings.get("core_num", 0))


def jit(*args, **options):
    """``@asc2.jit``, ``@asc2.jit(**options)`` or ``@asc2.jit(asc.CompileOptions(...), ...)``:
    an asc2 kernel (see the module's documentation)."""
    if len(args) == 1 and callable(args[0]) and not options and \
            not isinstance(args[0], _options._OptionSet):
        return _make(args[0], {})
    settings = _merge(args, options)
    return functools.partial(_make, settings=settings)


def _reexported():
    names = [n for n in _tl.__all__ if n not in ("jit", "JitFunction")]
    return names + ["jit", "JitFunction", "KernelError", "ceildiv", "CodegenOptions",
                    "CompileOptions", "LaunchOptions"]


__all__ = sorted(set(_reexported()))
