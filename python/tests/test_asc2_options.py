"""asc2.jit options: every option of asc's runtime API (seed 001) by name and as option objects;
those with a CPU meaning act, the Ascend-only ones are accepted and change nothing."""

import os
import re

import numpy as np
import pytest

from tileops import asc, asc2

# Seed 001, CodegenOptions / CompileOptions / LaunchOptions: every option with a legal value.
SEED_OPTIONS = {
    "capture_exceptions": False, "ir_multithreading": False, "debug": True, "strip_loc": True,
    "verify_sync": True, "print_ir_before_all": False, "run_passes": False,
    "kernel_type": asc.KernelType.AIV_ONLY, "auto_sync": False, "auto_sync_log": "sync.log",
    "matmul_cube_only": True, "always_compile": True, "bisheng_options": ("-DTILEOPS_X=1",),
    "opt_level": 1, "run_asc2_passes": True, "densify_load_store": True, "insert_sync": False,
    "reuse_ub": True, "reuse_ub_in_out": True, "static_alloc": True, "core_num": 2,
    "stream": None}
OPTION_CLASS = {"capture_exceptions": asc.CodegenOptions, "ir_multithreading": asc.CodegenOptions,
                "core_num": asc.LaunchOptions, "stream": asc.LaunchOptions}


def body(x, y, n: int, tile: asc.ConstExpr[int]):
    tx, ty = asc2.tensor(x, [n]), asc2.tensor(y, [n])
    for i in asc2.range(asc2.block_idx(), asc2.ceildiv(n, tile), asc2.block_num()):
        v = asc2.load(tx, [tile], offsets=[i * tile])
        unused = v * 3.0  # noqa: F841  (dead code: the passes remove it)
        asc2.store(v + 1.0, ty, offsets=[i * tile])


def run(kernel, launch=None):
    x = np.arange(50, dtype=np.float32)
    y = np.zeros_like(x)
    (kernel if launch is None else kernel[launch])(x, y, 50, 16)
    np.testing.assert_array_equal(y, x + 1)


@pytest.mark.parametrize("backend", ["interp", "cpu"])
@pytest.mark.parametrize("name", sorted(SEED_OPTIONS))
def test_every_seed_option_by_name_and_as_an_object(name, backend):
    value = SEED_OPTIONS[name]
    run(asc2.jit(backend=backend, **{name: value})(body))
    option_class = OPTION_CLASS.get(name, asc.CompileOptions)
    run(asc2.jit(option_class(**{name: value}), backend=backend)(body))


def test_option_objects_keep_defaults_and_what_was_set():
    options = asc.CompileOptions(opt_level=2, bisheng_options=["-g"])
    assert options.opt_level == 2 and options.bisheng_options == ("-g",)
    assert options.reuse_ub is False and options.auto_sync is True  # seed 001's defaults
    assert options.given() == {"opt_level": 2, "bisheng_options": ("-g",)}
    assert asc.CodegenOptions().capture_exceptions is True
    assert asc.LaunchOptions().core_num == 0
    with pytest.raises(AttributeError, match="immutable"):
        options.opt_level = 3


def test_mixed_objects_and_keywords():
    kernel = asc2.jit(asc.CodegenOptions(capture_exceptions=False),
                      asc.CompileOptions(opt_level=2), asc.LaunchOptions(core_num=3),
                      always_compile=True, backend="interp")(body)
    assert kernel.options == {"opt_level": 2, "always_compile": True, "backend": "interp"}
    run(kernel)


def test_unknown_options_are_type_errors_listing_the_known_ones():
    with pytest.raises(TypeError, match=r"asc2.jit: unknown option 'opt_levle'; known options: "
                       r".*always_compile.*bisheng_options.*capture_exceptions"):
        asc2.jit(opt_levle=2)
    with pytest.raises(TypeError, match=r"asc.CompileOptions: unknown option 'core_num'; known "
                       r"options: debug, strip_loc"):
        asc.CompileOptions(core_num=2)
    with pytest.raises(TypeError, match="positional arguments must be asc.CodegenOptions"):
        asc2.jit({"opt_level": 2})


@pytest.mark.parametrize("name,value,error,message", [
    ("opt_level", "3", TypeError, "option 'opt_level' must be an int"),
    ("opt_level", 4, ValueError, "opt_level"),
    ("debug", 1, TypeError, "option 'debug' must be a bool"),
    ("auto_sync", "yes", TypeError, "option 'auto_sync' must be a bool"),
    ("kernel_type", "aiv", TypeError, "option 'kernel_type' must be an asc.KernelType"),
    ("bisheng_options", "-O2 -g", TypeError, "option 'bisheng_options' must be a tuple of str"),
    ("bisheng_options", ("",), ValueError, "compiler_args"),
    ("core_num", 1.5, TypeError, "option 'core_num' must be an int")])
def test_bad_option_values(name, value, error, message):
    with pytest.raises(error, match=message):
        asc2.jit(**{name: value})(body)


def test_an_option_given_twice_differently():
    with pytest.raises(TypeError, match="option 'opt_level' given twice"):
        asc2.jit(asc.CompileOptions(opt_level=2), opt_level=3)
    asc2.jit(asc.CompileOptions(opt_level=2), opt_level=2)(body)  # the same value is fine


def raising(x, n: int):
    asc2.tensor(x, [n])
    return {}["missing"]  # a KeyError while tracing


def test_capture_exceptions_locates_errors_as_runtime_errors():
    kernel = asc2.jit(backend="interp")(raising)
    with pytest.raises(asc2.KernelError) as info:
        kernel[1](np.zeros(4, np.float32), 4)
    line = raising.__code__.co_firstlineno + 2
    assert isinstance(info.value, RuntimeError)
    assert f"test_asc2_options.py:{line}: in kernel 'raising': KeyError" in str(info.value)
    assert type(info.value.__cause__) is KeyError


def test_capture_exceptions_false_raises_the_original():
    kernel = asc2.jit(capture_exceptions=False, backend="interp")(raising)
    with pytest.raises(KeyError) as info:
        kernel[1](np.zeros(4, np.float32), 4)
    assert type(info.value) is KeyError and info.value.__cause__ is None


def test_tileops_trace_errors_are_not_wrapped():
    @asc2.jit(backend="interp")
    def bad_static_range(x, n: int):
        for _ in asc2.static_range(n):  # n is a runtime value
            pass

    with pytest.raises(TypeError, match=r"^tl: test_asc2_options.py:\d+: 'static_range'"):
        bad_static_range[1](np.zeros(4, np.float32), 4)


def count_ops(ir):
    return sum(1 for line in ir.splitlines() if re.match(r"\s*%\w+ = ", line))


def test_run_passes_false_keeps_the_traced_ir():
    args = (np.zeros(4, np.float32), np.zeros(4, np.float32), 4, 4)
    optimised = asc2.jit(backend="interp")(body).ir(*args)
    as_traced = asc2.jit(run_passes=False, backend="interp")(body).ir(*args)
    assert count_ops(as_traced) > count_ops(optimised)  # the dead multiply is still there
    run(asc2.jit(run_passes=False, backend="cpu")(body))


LOCATION = re.compile(r"test_asc2_options\.py:\d+")


def test_print_ir_before_all_and_strip_loc(capfd):
    run(asc2.jit(print_ir_before_all=True, backend="interp")(body))
    err = capfd.readouterr().err
    assert "before common-subexpressions" in err and "before codegen" in err
    assert "after" not in err and LOCATION.search(err)
    run(asc2.jit(print_ir_before_all=True, strip_loc=True, backend="interp")(body))
    err = capfd.readouterr().err
    assert "before codegen" in err and not LOCATION.search(err)


def test_debug_ir_has_locations_unless_strip_loc(tmp_path):
    args = (np.zeros(4, np.float32), np.zeros(4, np.float32), 4, 4)
    assert LOCATION.search(asc2.jit(debug=True, backend="interp")(body).ir(*args))
    stripped = asc2.jit(debug=True, strip_loc=True, backend="interp", dump_dir=str(tmp_path))
    ir = stripped(body).ir(*args)
    assert not LOCATION.search(ir)
    dumped = [p.read_text() for p in tmp_path.glob("*.tlir")]
    assert dumped and not any(LOCATION.search(text) for text in dumped)


def test_always_compile_retraces_every_launch():
    traces = []

    def counted(x, y, n: int, tile: asc.ConstExpr[int]):
        traces.append(tile)
        body(x, y, n, tile)

    cached = asc2.jit(backend="interp")(counted)
    run(cached), run(cached)
    assert traces == [16]
    run(asc2.jit(always_compile=True, backend="interp")(counted))
    assert traces == [16, 16]


def test_core_num_option_is_the_default_launch_size():
    blocks = np.zeros(8, np.int64)

    @asc2.jit(core_num=5, backend="interp")
    def record(out):
        asc2.store(asc2.full([1], asc2.block_num(), dtype=asc2.int64),
                   asc2.tensor(out, [8]), offsets=[asc2.block_idx()])

    record(blocks)
    assert blocks.tolist() == [5] * 5 + [0] * 3


def test_bisheng_options_never_reach_a_shell(tmp_path):
    marker = tmp_path / "ran"
    kernel = asc2.jit(bisheng_options=(f"-DX=$(touch {marker})", f"; touch {marker}"),
                      always_compile=True, backend="cpu")(body)
    try:
        run(kernel)
    except RuntimeError:
        pass  # the compiler may reject the arguments; it must not run them
    assert not os.path.exists(marker)


def test_bisheng_options_reach_the_compiler():
    kernel = asc2.jit(bisheng_options=("-fno-such-option-tileops",), always_compile=True,
                      backend="cpu")(body)
    with pytest.raises(RuntimeError, match="-fno-such-option-tileops"):
        run(kernel)
