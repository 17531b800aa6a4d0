"""asc's option classes (seed 001: CodegenOptions, CompileOptions, LaunchOptions) and how each
option maps onto tileops. Every option of the runtime API is accepted; those with a CPU meaning
act, the Ascend-only ones are validated and recorded but change nothing on the CPU
(docs/tile-language.md, "Coming from asc2")."""

import enum
import sys


class KernelType(enum.Enum):
    """Ascend kernel types (CompileOptions.kernel_type): which cores a kernel runs on. Accepted
    for compatibility; no effect on the CPU."""

    AIV_ONLY = "aiv_only"
    AIC_ONLY = "aic_only"
    MIX_AIV_1_0 = "mix_aiv_1_0"
    MIX_AIC_1_0 = "mix_aic_1_0"
    MIX_AIC_1_1 = "mix_aic_1_1"
    MIX_AIC_1_2 = "mix_aic_1_2"


def _bool(value):
    np = sys.modules.get("numpy")
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return bool(value)
    raise TypeError("a bool")


def _optional(check):
    def optional(value):
        return None if value is None else check(value)
    return optional


def _int(value):
    np = sys.modules.get("numpy")
    if isinstance(value, bool) or not (
            isinstance(value, int) or (np is not None and isinstance(value, np.integer))):
        raise TypeError("an int")
    return int(value)


def _str(value):
    if not isinstance(value, str):
        raise TypeError("a str")
    return value


def _kernel_type(value):
    if not isinstance(value, KernelType):
        raise TypeError("an asc.KernelType member or None")
    return value


def _arguments(value):
    # A tuple of strings, one compiler argument each: a plain string is refused rather than
    # split, so that no argument is ever re-tokenised.
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
        raise TypeError("a tuple of strings (one compiler argument each)")
    return tuple(value)


def _stream(value):
    if value is not None:
        raise ValueError("None (the CPU has no streams)")
    return value


# name -> (default, check, tileops option it sets or None, effect on the CPU)
CODEGEN = {
    "capture_exceptions": (True, _bool, None,
                           "False: an exception raised while tracing propagates unchanged"),
    "ir_multithreading": (True, _bool, None, "no CPU effect (tracing is single-threaded)"),
}
COMPILE = {
    "debug": (False, _bool, "debug", "verify after every pass, locations in IR, -g"),
    "strip_loc": (False, _bool, "strip_loc", "printed and dumped IR carry no locations"),
    "verify_sync": (False, _bool, None, "no CPU effect (no pipeline flags to verify)"),
    "print_ir_before_all": (False, _bool, "print_ir_before_all",
                            "prints the IR to stderr before each pass"),
    "run_passes": (True, _bool, "run_passes", "False: the traced IR runs unoptimised"),
    "kernel_type": (None, _optional(_kernel_type), None, "no CPU effect (one kind of core)"),
    "auto_sync": (True, _optional(_bool), None, "no CPU effect (no pipeline flags)"),
    "auto_sync_log": ("", _optional(_str), None, "no CPU effect"),
    "matmul_cube_only": (False, _bool, None, "no CPU effect (no cube unit)"),
    "always_compile": (False, _bool, "always_compile", "re-trace and recompile every launch"),
    "bisheng_options": (None, _optional(_arguments), "compiler_args",
                        "extra arguments for the cpu backend's C++ compiler (argv)"),
    "opt_level": (3, _int, "opt_level", "1: fewer passes and -O1; 2, 3: -O3 (3: unrolled)"),
    "run_asc2_passes": (False, _bool, None, "no CPU effect (always the tl pipeline)"),
    "densify_load_store": (False, _bool, None, "no CPU effect"),
    "insert_sync": (None, _optional(_bool), None, "no CPU effect (no pipeline flags)"),
    "reuse_ub": (False, _bool, None, "no CPU effect (no UB)"),
    "reuse_ub_in_out": (False, _bool, None, "no CPU effect (no UB)"),
    "static_alloc": (False, _bool, None, "no CPU effect (no TPipe)"),
}
LAUNCH = {
    "core_num": (0, _int, None, "blocks of a launch without [core_num]; 0 = every core"),
    "stream": (None, _stream, None, "must be None on the CPU"),
}
# tileops' own tl.jit options, accepted by asc2.jit as they are.
TILEOPS = {
    "backend": (None, _str, "backend", "interp | cpu | cuda | auto (else asc.runtime.config)"),
    "dump_dir": (None, _str, "dump_dir", "write IR, generated source and binary there"),
    "fast_math": (False, _bool, "fast_math", "contraction, reciprocals, a cheaper exp"),
    "target": (None, _str, "target", "cpu -march override"),
    "print_ir": (False, _bool, "print_ir", "prints the IR before and after each pass"),
}
ALL = {**CODEGEN, **COMPILE, **LAUNCH, **TILEOPS}


def check(owner, name, value):
    """``value`` validated for option ``name`` (TypeError naming the option and listing the known
    ones for an unknown name; TypeError/ValueError with the expectation for a bad value)."""
    if name not in ALL:
        raise TypeError(f"{owner}: unknown option '{name}'; known options: "
                        f"{', '.join(sorted(ALL))}")
    try:
        return ALL[name][1](value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{owner}: option '{name}' must be {e}, got {value!r}") from None


class _OptionSet:
    _FIELDS = {}

    def __init__(self, **options):
        owner = f"asc.{type(self).__name__}"
        given = {}
        for name, value in options.items():
            if name not in self._FIELDS:
                raise TypeError(f"{owner}: unknown option '{name}'; known options: "
                                f"{', '.join(self._FIELDS)}")
            given[name] = check(owner, name, value)
        object.__setattr__(self, "_given", given)

    def __getattr__(self, name):
        fields = type(self)._FIELDS
        if name in fields:
            return self._given.get(name, fields[name][0])
        raise AttributeError(f"{type(self).__name__} has no option '{name}'")

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; make a new one")

    def given(self):
        """The options set explicitly: only those override a kernel's defaults."""
        return dict(self._given)

    def __eq__(self, other):
        return type(other) is type(self) and other._given == self._given

    def __hash__(self):
        return hash((type(self), tuple(sorted(self._given.items(), key=lambda kv: kv[0]))))

    def __repr__(self):
        text = ", ".join(f"{k}={v!r}" for k, v in self._given.items())
        return f"asc.{type(self).__name__}({text})"


class CodegenOptions(_OptionSet):
    """Code generation options: capture_exceptions, ir_multithreading."""

    _FIELDS = CODEGEN


class CompileOptions(_OptionSet):
    """Compilation options (seed 001); see docs/tile-language.md for what each does here."""

    _FIELDS = COMPILE


class LaunchOptions(_OptionSet):
    """Launch options: core_num (0 = every core), stream (None on the CPU). Also accepted in
    brackets: ``kernel[core_num]``, ``kernel[core_num, stream]``, ``kernel[LaunchOptions(...)]``."""

    _FIELDS = LAUNCH

    def __init__(self, core_num=0, stream=None):
        super().__init__(core_num=core_num, stream=stream)
