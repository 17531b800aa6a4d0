#!/usr/bin/env python3
"""Writes the construct x backend coverage table of docs/tile-language.md from the tests.

Every test of tests/tl/ that exercises a construct of SPEC_TL.md says so in a `// covers: a b c`
comment above it (names as in CONSTRUCTS below); the Python front-end's tests
(python/tests/test_tl_*.py) do the same with `# covers: a b c` and fill their own column. This tool collects them and rewrites the table
between the coverage markers of the document; `--check` (run by CTest) fails instead when the
table is stale, a construct has no test, or a comment names an unknown construct.

Backends: CTest runs every tests/tl/tl_*_test once with TILEOPS_TL_BACKEND=interp and once with
=cpu (tests/CMakeLists.txt), so their constructs count for both; tl_cpu_*_test files choose
their backends themselves (CPU_ONLY lists those that run the cpu backend alone).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "tile-language.md"
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"

CONSTRUCTS = [
    # kernel definition and launch
    "jit", "GlobalAddress", "ConstExpr", "Int", "Float", "Bool", "launch", "core_num_0",
    "options", "print_ir", "dump_dir", "always_compile", "cache",
    # global tensors and tiles
    "tensor", "tensor_strides", "load", "pad_value", "tile_id", "store", "store_scalar", "prefetch",
    "full", "zeros", "full_like", "zeros_like", "arange", "copy", "concat", "to", "round_modes",
    "bitcast",
    # computation
    "add", "sub", "mul", "div", "floordiv", "mod", "maximum", "minimum", "pow", "eq", "ne",
    "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shl",
    "shr", "logical_and", "logical_or", "logical_not", "scalar_operands", "broadcasting",
    "promotion",
    "abs", "ceil", "floor", "round", "trunc", "exp", "exp2", "expm1", "log", "log2", "log1p",
    "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "erf", "sigmoid", "relu",
    "gelu", "gelu_tanh", "silu", "softplus", "negative", "reciprocal", "isnan", "isinf",
    "where", "mask",
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_mean", "argmax", "argmin",
    "all", "any", "keep_dims", "cumsum", "sort", "argsort", "topk",
    "reshape", "ravel", "expand_dims", "squeeze", "broadcast_to", "transpose", "T",
    "softmax", "rms_norm", "layer_norm", "matmul", "matmul_bias", "matmul_acc",
    "atomic_add", "atomic_max", "atomic_min",
    # control flow and programming model
    "block_idx", "block_num", "num_tiles", "ceildiv", "range", "unroll_factor", "parallel",
    "static_range", "if_", "if_trace_time", "Var", "trace_errors",
    # asc2's surface
    "tile_location", "int_division", "tile_methods", "numpy_scalars",
    # the AST front-end of the Python kernels
    "loop_carried", "runtime_if", "bool_ops", "ifexp", "nested_function", "sub_kernel",
    "no_source",
]
# Constructs of the Python front-end alone (its AST rewrite): their tests are Python tests that
# run every kernel on interp and cpu.
PYTHON_ONLY = {"loop_carried", "runtime_if", "bool_ops", "ifexp", "nested_function",
               "sub_kernel", "no_source", "tile_methods", "numpy_scalars"}
BACKENDS = ["interp", "cpu", "cuda"]
CPU_ONLY = {"tl_cpu_cache_test"}


def backends_of(stem):
    return {"cpu"} if stem in CPU_ONLY else {"interp", "cpu"}


def covers_names(text, comment="//"):
    """Names listed in `covers:` comments, including lines the formatter wrapped."""
    names, continuing = [], False
    for line in text.splitlines():
        m = re.search(re.escape(comment) + r"\s*covers:\s*(.*)", line)
        if m:
            names += re.split(r"[\s,]+", m.group(1).strip())
            continuing = True
        elif continuing and line.strip().startswith(comment):
            names += re.split(r"[\s,]+", line.strip()[len(comment):].strip())
        else:
            continuing = False
    return [n for n in names if n]


# C++ tests (the interp backend through the C++ front-end) and the Python front-end's tests
# (tileops.tl, also on interp): `// covers:` and `# covers:` comments.
SOURCES = [("tests/tl", "*_test.cc", "//"), ("python/tests", "test_tl_*.py", "#")]


def collect(folder, pattern, comment):
    covered, unknown = {}, []
    for path in sorted((ROOT / folder).glob(pattern)):
        for name in covers_names(path.read_text(), comment):
            if name not in CONSTRUCTS:
                unknown.append(f"{path.name}: {name}")
            covered.setdefault(name, set()).add(path.stem)
    return covered, unknown


def cell(tests, backend):
    return "yes" if any(backend in backends_of(t) for t in tests) else "**no test**"


def table(covered, python):
    lines = ["| construct | " + " | ".join(BACKENDS) + " | Python front-end | tests |",
             "|---|" + "---|" * len(BACKENDS) + "---|---|"]
    for name in CONSTRUCTS:
        tests = sorted(covered.get(name, ()))
        py_tests = sorted(python.get(name, ()))
        py = "yes" if py_tests else "not yet"
        interp, cpu = cell(tests, "interp"), cell(tests, "cpu")
        if name in PYTHON_ONLY:
            interp = cpu = "yes" if py_tests else "**no test**"
        lines.append(f"| `{name}` | {interp} | {cpu} | not yet | {py} | "
                     f"{', '.join(tests + py_tests)} |")
    return "\n".join(lines)


def main():
    covered, unknown = collect(*SOURCES[0])
    python, py_unknown = collect(*SOURCES[1])
    unknown += py_unknown
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + table(covered, python) + "\n" + text[end:]
    missing = [c for c in CONSTRUCTS
               if c not in covered and not (c in PYTHON_ONLY and c in python)]
    if "--check" in sys.argv:
        problems = [f"unknown construct in a covers comment: {u}" for u in unknown]
        problems += [f"no test covers '{m}'" for m in missing]
        if new != text:
            problems.append("docs/tile-language.md coverage table is stale: run tools/tl/coverage.py")
        for p in problems:
            print(p)
        return 1 if problems else 0
    DOC.write_text(new)
    py_missing = [c for c in CONSTRUCTS if c not in python]
    print(f"coverage: {len(CONSTRUCTS) - len(missing)}/{len(CONSTRUCTS)} constructs tested; "
          f"missing: {missing}; from Python, missing: {py_missing}; unknown: {unknown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
