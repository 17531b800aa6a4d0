"""tileops.tl: the tile language in Python (names follow pyasc's asc2).

A kernel is a Python function decorated with ``@tl.jit``; it is *traced once per
specialisation* (ConstExpr values, argument dtypes, options): every ``tl.`` call appends an op to
an SSA IR that is verified and executed by a backend: ``cpu`` (generated C++, compiled and
cached) when a compiler is found, else ``interp``, the IR interpreter that is the reference
(``TILEOPS_TL_BACKEND`` or ``backend=`` chooses). Errors name the construct
and the kernel's Python line. Reference: docs/tile-language.md.

    @tl.jit
    def vadd(x: tl.GlobalAddress, y: tl.GlobalAddress, z: tl.GlobalAddress, n: int,
             tile: tl.ConstExpr[int]):
        tx, ty, tz = tl.tensor(x, [n]), tl.tensor(y, [n]), tl.tensor(z, [n])
        for i in tl.range(tl.block_idx(), tl.ceildiv(n, tile), tl.block_num()):
            tl.store(tl.load(tx, [tile], offsets=[i * tile]) +
                     tl.load(ty, [tile], offsets=[i * tile]), tz, offsets=[i * tile])

    vadd[16](x, y, z, n, 1024)   # 16 blocks; vadd(...) or vadd[0](...) = every core

Parameters (by annotation): ``tl.GlobalAddress`` (a numpy array, torch tensor or DLPack object,
passed by pointer: never copied; it must be writable; ``tl.reinterpret(x, dtype)`` passes it
as another dtype of the same size, e.g. 8-bit floats over uint8), ``tl.ConstExpr[T]`` (a
trace-time Python value keyed exactly: numbers, strings, bools, None, dtypes, enums, tuples of
those; anything else, e.g. an array, is a TypeError), runtime
``int``, ``float`` and ``bool`` scalars. Control flow, compiled from the kernel's AST as asc2 does (_frontend.py): ``for i in
tl.range(...)`` is a runtime loop whose rebound names (``acc = acc + v``) are loop-carried;
``if`` on a traced scalar is a runtime branch whose rebound names are its results;
``tl.static_range(n)`` and Python ``range`` unroll. The explicit forms stay: ``tl.Var``,
``with tl.if_(cond):`` / ``with tl.else_():`` and ``tl.if_(cond, then, else_)``.
"""

import ast
import builtins
import contextlib
import enum
import functools
import inspect
import os
import sys
import textwrap
import threading

from tileops import _C, _frontend
from tileops._C.tl import (DataType, RoundMode, Value, Var, abs, all, any, arange, argmax,
                           argmin, argsort, atomic_add, atomic_max, atomic_min, bitwise_not,
                           block_idx, block_num, broadcast_to, ceil, concat, copy, cos, cosh,
                           cumsum, erf, exp, exp2, expand_dims, expm1, floor, floordiv, full,
                           full_like, gelu, if_, else_, isinf, isnan, layer_norm, load, log, log1p,
                           log2, logical_and, logical_not, logical_or, mask, matmul, matmul_acc,
                           maximum, minimum, mod, negative, num_tiles, pow, prefetch, range, ravel,
                           reciprocal, reduce_max, reduce_mean, reduce_min, reduce_prod,
                           reduce_sum, relu, reshape, rms_norm, round, rsqrt, sigmoid, silu, sin,
                           sinh, softmax, softplus, sort, sqrt, squeeze, store, tan, tanh, tensor,
                           topk, transpose, trunc, where, zeros, zeros_like)
from tileops._C.tl import add, div, mul, sub  # noqa: F401  (function forms of + / * -)
# Tile-location hints; trace errors: ValueError / TypeError that also derive from RuntimeError
# (as asc2's), naming file:line.
from tileops._C.tl import TileLocation, TraceError, TraceTypeError

_C.tl._set_package_dir(os.path.dirname(os.path.abspath(__file__)) + os.sep)

bool_ = DataType.bool
int8, int16, int32, int64, uint8 = (DataType.int8, DataType.int16, DataType.int32,
                                    DataType.int64, DataType.uint8)
float16, bfloat16, float32, float64 = (DataType.float16, DataType.bfloat16, DataType.float32,
                                       DataType.float64)
float8_e4m3fn, float8_e5m2, hifloat8 = (DataType.float8_e4m3fn, DataType.float8_e5m2,
                                        DataType.hifloat8)

_state = threading.local()  # per thread: launch arguments of the trace running, nesting depth


def _where():
    """'file.py:LINE' of the user's line calling into tileops.tl."""
    file, line, _ = _C.tl._caller_location()
    return f"{os.path.basename(file)}:{line}"


def _fail(construct, message, exc=ValueError, where=None):
    exc = {ValueError: TraceError, TypeError: TraceTypeError}.get(exc, exc)
    raise exc(f"tl: {where or _where()}: '{construct}': {message}")


class GlobalAddress:
    """Parameter annotation: a pointer to global memory (numpy array, torch tensor, DLPack)."""


class _Reinterpreted:
    """A GlobalAddress argument whose elements a kernel reads as another dtype (tl.reinterpret)."""

    __slots__ = ("_tl_storage", "_tl_dtype")

    def __init__(self, storage, dtype):
        self._tl_storage, self._tl_dtype = storage, dtype


def reinterpret(x, dtype):
    """``x`` (numpy array, torch tensor, DLPack object) as a GlobalAddress argument of elements of
    ``dtype``, of the same size: e.g. uint8 storage of ``tl.float8_e5m2`` or ``tl.hifloat8``
    data, which numpy and torch 1.13 cannot hold (``kernel[n](tl.reinterpret(q, tl.float8_e5m2),
    ...)``). The memory is passed by pointer, never copied. tileops.ops operators take it as any
    tensor argument too (an 8-bit float over uint8 storage only: an fp8 KV cache)."""
    return _Reinterpreted(x, dtype)


class _ConstExprOf:
    def __init__(self, type_):
        self.type = type_

    def __repr__(self):
        return f"tl.ConstExpr[{getattr(self.type, '__name__', self.type)}]"


class ConstExpr:
    """Parameter annotation: a trace-time value (``tl.ConstExpr[int]``, ``[tuple]``, ...)."""

    def __class_getitem__(cls, type_):
        return _ConstExprOf(type_)


def static_range(*args):
    """0, 1, ..., n - 1 as Python ints (like range): the body is traced once per value."""
    for a in args:
        if isinstance(a, Value):
            _fail("static_range", "bounds must be trace-time ints (ConstExpr or Python ints); "
                  "use tl.range for runtime bounds", TypeError)
    return builtins.range(*args)


def ceildiv(a, b):
    """ceil(a / b). Two integers (Python or numpy, e.g. ``ceildiv(np.prod(shape), 256)``) give a
    Python int, on the host too, so shapes computed from them stay static; a traced value on
    either side gives a traced value."""
    np = sys.modules.get("numpy")
    if np is not None:  # numpy integers as the Python ints they hold
        a, b = (int(v) if isinstance(v, np.integer) else v for v in (a, b))
    if type(a) is int and type(b) is int and b == 0 and not tracing():
        raise ZeroDivisionError(f"tl.ceildiv: b must not be 0 (a = {a})")
    return _C.tl.ceildiv(a, b)


def tracing():
    """Whether a kernel is being traced on this thread (tl calls are legal)."""
    return getattr(_state, "depth", 0) > 0


# --- parameters ---------------------------------------------------------------------------

_SCALARS = {int: "int", float: "float", bool: "bool"}


def _param_kind(fn, param, infer_kinds=False):
    name, annotation = param.name, param.annotation
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        raise TypeError(f"tl.jit: kernel '{fn.__name__}': *args/**kwargs parameters are not "
                        "supported")
    if isinstance(annotation, str):  # from __future__ import annotations
        try:
            annotation = eval(annotation, fn.__globals__, {"tl": sys.modules[__name__]})
        except Exception as e:  # noqa: BLE001 - any failure is a bad annotation
            raise TypeError(f"tl.jit: kernel '{fn.__name__}', parameter '{name}': cannot "
                            f"evaluate the annotation {annotation!r}: {e}") from None
    if annotation is GlobalAddress:
        return "ptr", None
    if annotation is ConstExpr:
        return "constexpr", None
    if isinstance(annotation, _ConstExprOf):
        return "constexpr", annotation.type
    if annotation in _SCALARS:
        return _SCALARS[annotation], None
    if infer_kinds and annotation is inspect.Parameter.empty:
        return "auto", None
    raise TypeError(f"tl.jit: kernel '{fn.__name__}', parameter '{name}': annotate it as "
                    f"tl.GlobalAddress, tl.ConstExpr[T], int, float or bool (got "
                    f"{'nothing' if annotation is inspect.Parameter.empty else annotation!r})")


def _argument_kind(value, kernel, name):
    """The runtime kind of an unannotated parameter from its launch argument: 'ptr' for memory
    (arrays, torch tensors, DLPack objects, tl.reinterpret), 'bool', 'int' (Python or numpy
    integers), 'float' (Python or numpy floats)."""
    np = sys.modules.get("numpy")
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return "bool"
    if np is not None and isinstance(value, np.generic):  # before the array test: scalars have
        if value.dtype.kind in "iu":                      # __array_interface__ too
            return "int"
        if value.dtype.kind == "f":
            return "float"
    elif isinstance(value, _Reinterpreted) or hasattr(value, "__dlpack__") or \
            hasattr(value, "__array_interface__"):
        return "ptr"
    elif isinstance(value, int):
        return "int"
    elif isinstance(value, float):
        return "float"
    raise TypeError(f"{kernel}: argument '{name}': an unannotated parameter takes its kind from "
                    "its argument, which must be an array, torch tensor or DLPack object "
                    "(GlobalAddress), an int, a float or a bool; got "
                    f"{type(value).__name__} (annotate the parameter, e.g. tl.ConstExpr[...])")


def _python_number(value, type_):
    """A numpy scalar given for ConstExpr[int | float | bool] as the Python number it stands
    for (np.int64(4) selects the trace of 4), so that the kernel sees plain Python values."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, np.generic):
        return value
    kind = value.dtype.kind
    if (type_ is bool and kind == "b") or (type_ in (int, float) and kind in "iu") or \
            (type_ is float and kind == "f"):
        return value.item()
    return value  # refused by _canonical with the expected type


def _shape_tuple(value):
    """torch.Size (a tuple subclass) as the plain tuple of ints it is, so shapes key exactly."""
    torch = sys.modules.get("torch")
    if torch is not None and type(value) is torch.Size:
        return tuple(value)
    return value


def _canonical(value, kernel, name, type_):
    """A ConstExpr as its specialisation key: text that no other value shares (see _key)."""
    if type_ in (int, float, bool, str, tuple) and not isinstance(value, type_):
        if not (type_ is float and isinstance(value, int) and not isinstance(value, bool)):
            raise TypeError(f"{kernel}: argument '{name}': expected ConstExpr["
                            f"{type_.__name__}], got {type(value).__name__} {value!r}")
    try:
        return _key(value)
    except TypeError:
        text = repr(value)
        raise TypeError(
            f"{kernel}: argument '{name}': a ConstExpr must be a bool, int, float, complex, str, "
            "None, dtype, enum member or a tuple/list of those (its exact value selects the "
            f"traced specialisation), got {type(value).__name__} "
            f"{text if len(text) <= 80 else text[:77] + '...'}") from None


def _key(value):
    """The exact key of a ConstExpr value: a type tag, then the value in a form whose end is
    known (strings and sequences length-prefixed), so that no two values, nor two argument lists,
    share a key. TypeError for values without one (arrays: their repr is truncated)."""
    t = type(value)
    if value is None:
        return "N"
    if t is bool:
        return "b1" if value else "b0"
    if t is int:
        return f"i{value}"
    if t is float:
        return "f" + value.hex()  # exact; -0.0 and 0.0 differ
    if t is complex:
        return f"c{value.real.hex()},{value.imag.hex()}"
    if t is str:
        return f"s{len(value)}:{value}"
    if t in (tuple, list):
        parts = [_key(v) for v in value]
        return f"{'t' if t is tuple else 'l'}{len(parts)}(" + ",".join(parts) + ")"
    if t is DataType or isinstance(value, RoundMode):
        return f"d{t.__name__}.{int(value)}"
    if isinstance(value, enum.Enum):
        qualname = f"{t.__module__}.{t.__qualname__}.{value.name}"
        return f"e{len(qualname)}:{qualname}"
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return f"n{value.dtype.str}:{value.tobytes().hex()}"  # the exact bits of its type
    if np is not None and isinstance(value, np.dtype) and value.kind in "biufcmM" and \
            value.names is None and value.subdtype is None:
        return f"D{len(value.str)}:{value.str}"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return f"T{value}"
    raise TypeError(t.__name__)


# --- kernels ------------------------------------------------------------------------------


class JitFunction:
    """A @tl.jit kernel: ``kernel[core_num](*args)`` launches, ``kernel(*args)`` launches on
    every core (or, inside another kernel's trace, inlines the function).

    ``infer_kinds``: unannotated parameters take their kind from each launch's arguments
    (asc2.jit); the kinds select the engine kernel, so they are part of the specialisation."""

    def __init__(self, fn, options, infer_kinds=False):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._signature = inspect.signature(fn)
        self.options = dict(options)
        self._checked = False
        self._params = self._kernel = None
        # Engine kernels by (runtime kinds, launch-time option overrides); most kernels have one.
        self._kernels = {}
        self._kernels_lock = threading.Lock()
        try:
            self._params = [(p.name, *_param_kind(fn, p, infer_kinds))
                            for p in self._signature.parameters.values()]
        except TypeError as e:
            # A sub-kernel (only called from kernels) may take untyped Values: the parameter
            # kinds are needed, and checked, when it is launched.
            self._param_error = e
        if self._params is not None and builtins.all(k != "auto" for _, k, _ in self._params):
            self._kernel = self._engine(tuple(k for _, k, _ in self._params), ())
        else:
            _C.tl.Kernel(fn.__name__, [], self._trace, self.options)  # validates the options

    def _trace_body(self):
        """What the engine calls to trace: the Python function with tileops' integer division
        (asc2 wraps it with its own)."""
        trace = self._trace

        def body(values):
            with _int_division("default"):
                trace(values)
        return body

    def _option_overrides(self):
        """Options decided per launch rather than at decoration (asc2: the configured backend),
        as sorted (name, value) pairs."""
        return ()

    def _engine(self, kinds, overrides):
        key = (kinds, overrides)
        with self._kernels_lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                params = [(name, kind) for (name, _, _), kind in zip(self._params, kinds)]
                kernel = _C.tl.Kernel(self.fn.__name__, params, self._trace_body(),
                                      {**self.options, **dict(overrides)})
                self._kernels[key] = kernel
            return kernel

    def _trace(self, values):
        if not self._checked:
            _check_source(self.fn)
            self._checked = True
        launch_args = _state.launch_args
        args = [launch_args[i] if kind == "constexpr" else values[i]
                for i, (_, kind, _) in enumerate(self._params)]
        _state.depth = getattr(_state, "depth", 0) + 1
        try:
            result = self._body()(*args)
        finally:
            _state.depth -= 1
        if result is not None:
            raise TypeError(f"tl: kernel '{self.fn.__name__}' returned {type(result).__name__}; "
                            "a launched kernel returns nothing (write results with tl.store)")

    def _inline(self, *args, **kwargs):
        """Traces the kernel's body into the kernel being traced (a sub-kernel call)."""
        if not self._checked:
            _check_source(self.fn)
            self._checked = True
        return self._body()(*args, **kwargs)

    def _body(self):
        """The kernel as the AST front-end rewrote it (_frontend.py): Python control flow with
        asc2's meaning; the function itself when its source is unavailable."""
        body = getattr(self, "_rewritten", None)
        if body is None:
            body = self._rewritten = _frontend.compile_kernel(self.fn) or self.fn
        return body

    def _arguments(self, args, kwargs):
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}: {e}") from None
        bound.apply_defaults()
        values = [self._constexpr_value(v, t) if kind == "constexpr" else v
                  for v, (_, kind, t) in zip(bound.arguments.values(), self._params)]
        engine = [_canonical(v, self.fn.__name__, name, t) if kind == "constexpr" else v
                  for v, (name, kind, t) in zip(values, self._params)]
        return values, engine

    def _constexpr_value(self, value, type_):
        """A ConstExpr argument as the kernel sees it: numpy scalars for ConstExpr[int | float |
        bool] become Python numbers, torch.Size a tuple; a bare ConstExpr keeps a numpy scalar's
        exact type (it changes promotions in the kernel)."""
        value = _shape_tuple(value)
        return _python_number(value, type_) if type_ in (int, float, bool) else value

    def _kernel_for(self, values):
        overrides = self._option_overrides()
        if self._kernel is not None and not overrides:
            return self._kernel
        kinds = tuple(_argument_kind(v, self.fn.__name__, name) if kind == "auto" else kind
                      for v, (name, kind, _) in zip(values, self._params))
        return self._engine(kinds, overrides)

    def _run(self, action, args, kwargs):
        if self._params is None:
            raise self._param_error
        values, engine = self._arguments(args, kwargs)
        kernel = self._kernel_for(values)
        previous = getattr(_state, "launch_args", None)
        _state.launch_args = values
        try:
            return action(kernel, engine)
        finally:
            _state.launch_args = previous

    def launch(self, core_num, *args, **kwargs):
        """Runs the kernel on ``core_num`` blocks (0 = every core) with the GIL released."""
        core_num = _core_num(core_num, self.fn.__name__)
        self._run(lambda kernel, engine: kernel.launch(core_num, engine), args, kwargs)

    def __getitem__(self, launch):
        core_num, stream = (launch if isinstance(launch, tuple) else (launch, None))
        if stream is not None:
            raise ValueError(f"{self.fn.__name__}: stream must be None on the CPU, got "
                             f"{stream!r}")
        return functools.partial(self.launch, core_num)

    def __call__(self, *args, **kwargs):
        if tracing():  # a sub-kernel: traced inline, specialised by its caller's values
            with _int_division("default"):  # its own '/', even inside an asc2 kernel
                return self._inline(*args, **kwargs)
        return self.launch(0, *args, **kwargs)

    def ir(self, *args, **kwargs):
        """The IR (after passes) of the specialisation these arguments select."""
        return self._run(lambda kernel, engine: kernel.ir(engine), args, kwargs)

    @property
    def num_specialisations(self):
        """Specialisations traced so far (the size of the kernel's caches)."""
        with self._kernels_lock:
            kernels = list(self._kernels.values())
        return sum(k.num_specialisations for k in kernels)


@contextlib.contextmanager
def _int_division(mode):
    """Integer '/' semantics while tracing ('default': true division, 'trunc': asc2's), set
    through the engine's thread-local hook."""
    hook = _C.tl._set_int_division
    previous = hook(mode)
    try:
        yield
    finally:
        hook(previous)


def _core_num(core_num, kernel):
    """core_num as a Python int: ints and numpy integers (not bools) in [0, 2**63)."""
    np = sys.modules.get("numpy")
    if isinstance(core_num, bool) or not (
            isinstance(core_num, int) or (np is not None and isinstance(core_num, np.integer))):
        raise TypeError(f"{kernel}: core_num must be an int, got {core_num!r}")
    core_num = int(core_num)
    if not 0 <= core_num < 2**63:
        raise ValueError(f"{kernel}: core_num must be in [0, 2**63) (0 = every core), got "
                         f"{core_num}")
    return core_num


def jit(fn=None, **options):
    """``@tl.jit`` or ``@tl.jit(opt_level=3, print_ir=True, ...)``. Options (unknown names and
    bad values are errors): always_compile, opt_level (1..3), debug, print_ir,
    print_ir_before_all, run_passes, strip_loc, backend (interp | cpu | cuda | auto), dump_dir,
    fast_math, target, compiler_args (docs/tile-language.md)."""
    if fn is None:
        return lambda f: JitFunction(f, options)
    if options:
        raise TypeError("tl.jit: pass options as @tl.jit(name=value) keywords")
    return JitFunction(fn, options)


# --- trace-time checks of the kernel's source ---------------------------------------------


def _check_source(fn):
    """Rejects constructs a traced kernel cannot express, at the kernel's line."""
    try:
        lines, start = inspect.getsourcelines(fn)
        file = os.path.basename(inspect.getsourcefile(fn) or "<kernel>")
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        # No source (REPL, exec) or a lambda inside a larger expression: the tracer still
        # catches break and misuse of traced values dynamically.
        return
    checker = _SourceChecker(fn, file, start - 1)
    for node in tree.body:
        checker.visit(node)


class _SourceChecker(ast.NodeVisitor):
    _HOST_IO = {"print", "input", "open"}

    def __init__(self, fn, file, offset):
        self.fn, self.file, self.offset = fn, file, offset
        self.loops = []  # enclosing loops inside the current function: "tl.range" or "python"

    def fail(self, node, construct, message):
        _fail(construct, message, where=f"{self.file}:{node.lineno + self.offset}")

    def is_tl_range(self, call):
        if not isinstance(call, ast.Call):
            return False
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr == "range" and isinstance(f.value, ast.Name):
            return self.fn.__globals__.get(f.value.id) is sys.modules[__name__]
        return isinstance(f, ast.Name) and self.fn.__globals__.get(f.id) is range

    def visit_FunctionDef(self, node):  # noqa: N802 - ast.NodeVisitor naming
        saved, self.loops = self.loops, []
        self.generic_visit(node)
        self.loops = saved

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815
    visit_Lambda = visit_FunctionDef  # noqa: N815

    def visit_For(self, node):  # noqa: N802
        self.visit(node.iter)
        self.loops.append("tl.range" if self.is_tl_range(node.iter) else "python")
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        self.loops.pop()

    def visit_While(self, node):  # noqa: N802
        self.visit(node.test)
        self.loops.append("python")
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        self.loops.pop()

    def _in_tl_range(self):
        return "tl.range" in self.loops

    def visit_Break(self, node):  # noqa: N802
        if self.loops and self.loops[-1] == "tl.range":
            self.fail(node, "break", "not supported in a tl.range loop (runtime loops have no "
                      "early exit; use tl.if_ or a mask)")

    def visit_Continue(self, node):  # noqa: N802
        if self.loops and self.loops[-1] == "tl.range":
            self.fail(node, "continue", "not supported in a tl.range loop (the body is traced "
                      "once; use tl.if_ to skip work)")

    def visit_Return(self, node):  # noqa: N802
        if self._in_tl_range():
            self.fail(node, "return", "early return from a tl.range loop is not supported")
        self.generic_visit(node)

    def _generator(self, node):
        self.fail(node, "yield", "generators are not supported inside kernels")

    visit_Yield = visit_YieldFrom = visit_Await = _generator  # noqa: N815

    def visit_Try(self, node):  # noqa: N802
        self.fail(node, "try", "exceptions are not supported inside kernels (the body is traced "
                  "once; nothing can be caught at run time)")

    visit_TryStar = visit_Try  # noqa: N815

    def visit_Call(self, node):  # noqa: N802
        if isinstance(node.func, ast.Name) and node.func.id in self._HOST_IO:
            self.fail(node, node.func.id, "host I/O is not supported inside kernels (the body "
                      "runs once, while tracing, not per launch)")
        self.generic_visit(node)


__all__ = [name for name in dir() if not name.startswith("_") and name not in {
    "ast", "builtins", "contextlib", "enum", "functools", "inspect", "os", "sys", "textwrap",
    "threading"}]
