"""``tileops check FILE...``: the static layer of the kernel-author workflow (seed 002), read
from the file's syntax tree without importing or running it.

Each finding is ``file:line: error|warning: message [rule]``; errors make the exit status 1.
Rules (docs/author-workflow.md explains each):
  syntax         the file is valid Python
  jit-kernel     a function decorated with @tl.jit (or @jit, @asc2.jit)
  banned         no print/input/open, try, break, continue, lambda (but as a tl.if_ branch),
                 import, yield, await, global/nonlocal inside a kernel; no asc v1 APIs
                 (data_copy, set_flag, ...)
  python-range   (warning) Python range() in a kernel unrolls at trace time: say tl.range or
                 tl.static_range
  store          a kernel stores its result (store or atomic_*)
  load           (warning) a kernel loads something
  launch         the host launches a kernel as kernel[core_num](...)
  numeric-check  the host compares with numpy (np.testing.assert_allclose / assert_array_equal)
  host-driver    an ``if __name__ == "__main__":`` driver
  constexpr-shape  tile shapes (load, full, zeros, arange, ...) use only ConstExprs, literals
                 and module constants, never runtime scalars or tensor extents
"""

import ast
import json
import sys
from dataclasses import asdict, dataclass

BANNED_CALLS = {"print": "host I/O", "input": "host I/O", "open": "host I/O",
                "exec": "dynamic code", "eval": "dynamic code"}
ASC_V1_APIS = {"data_copy", "set_flag", "wait_flag", "GlobalTensor", "LocalTensor", "pipe_barrier"}
STORES = {"store", "atomic_add", "atomic_max", "atomic_min"}
# Tile-creating calls and the argument (position, keyword) that holds a static shape.
SHAPE_ARGS = {"load": (1, "shape"), "full": (0, "shape"), "zeros": (0, "shape"),
              "ones": (0, "shape"), "arange": (0, "n"), "static_range": (0, "n"),
              "broadcast_to": (1, "shape"), "reshape": (1, "shape")}
# Calls whose results are runtime values (taint the names they are assigned to).
RUNTIME_CALLS = {"block_idx", "block_num", "num_tiles", "tensor", "load", "Var"}
# Attributes of a tile that are static even when the tile is not.
STATIC_ATTRS = {"shape", "dtype", "size", "ndim"}
NUMERIC_CHECKS = {"assert_allclose", "assert_array_equal", "assert_equal",
                  "assert_array_almost_equal", "assert_almost_equal"}


@dataclass
class Finding:
    file: str
    line: int
    severity: str  # "error" or "warning"
    rule: str
    message: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.severity}: {self.message} [{self.rule}]"


def _call_name(call):
    """`f` for f(...), `attr` for x.y.attr(...), else None."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _is_jit_decorator(node):
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id == "jit"
    return isinstance(target, ast.Attribute) and target.attr == "jit"


def _is_constexpr(annotation):
    if annotation is None:
        return False
    return any(isinstance(n, ast.Name) and n.id == "ConstExpr"
               or isinstance(n, ast.Attribute) and n.attr == "ConstExpr"
               for n in ast.walk(annotation))


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _KernelChecker(ast.NodeVisitor):
    """Findings inside one @jit function."""

    def __init__(self, report, kernel):
        self.report, self.kernel = report, kernel
        self.loads = self.stores = 0
        self.branch_lambdas = set()  # ids of lambdas passed to tl.if_: its branch callbacks
        self.runtime = self._runtime_names(kernel)
        # Global tensor views: their .shape is a runtime extent, unlike a tile's.
        self.tensors = {name for node in ast.walk(kernel) if isinstance(node, ast.Assign)
                        and any(isinstance(c, ast.Call) and _call_name(c) == "tensor"
                                for c in ast.walk(node.value))
                        for t in node.targets for name in _names(t)}

    @staticmethod
    def _runtime_names(kernel):
        """Parameters that are not ConstExprs, tl.range loop variables, and names assigned from
        them or from runtime calls (to a fixpoint: assignments may come in any order)."""
        args = kernel.args
        params = args.posonlyargs + args.args + args.kwonlyargs
        runtime = {a.arg for a in params if not _is_constexpr(a.annotation)}
        assigns = []
        for node in ast.walk(kernel):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                assigns.append((targets, node.value))
            elif isinstance(node, ast.For):
                assigns.append(([node.target], node.iter))
        changed = True
        while changed:
            changed = False
            for targets, value in assigns:
                if not _KernelChecker._is_runtime(value, runtime):
                    continue
                for t in targets:
                    for name in _names(t) - runtime:
                        runtime.add(name)
                        changed = True
        return runtime

    @staticmethod
    def _is_runtime(expr, runtime):
        for node in ast.walk(expr):
            if isinstance(node, ast.Call) and _call_name(node) in RUNTIME_CALLS | {"range"}:
                return True
            if isinstance(node, ast.Name) and node.id in runtime:
                return True
        return False

    def _runtime_in_shape(self, expr):
        """The first runtime name a shape expression reads (tile.shape and the like excepted)."""
        static_bases = {id(n.value) for n in ast.walk(expr)
                        if isinstance(n, ast.Attribute) and n.attr in STATIC_ATTRS
                        and not (isinstance(n.value, ast.Name) and n.value.id in self.tensors)}
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id in self.runtime and id(node) not in \
                    static_bases:
                return node.id
            if isinstance(node, ast.Call) and _call_name(node) in RUNTIME_CALLS:
                return _call_name(node) + "()"
        return None

    def error(self, node, rule, message, severity="error"):
        self.report(node.lineno, severity, rule, f"{self.kernel.name}: {message}")

    def visit_Call(self, node):  # noqa: N802 - ast.NodeVisitor naming
        name = _call_name(node)
        if isinstance(node.func, ast.Name) and name in BANNED_CALLS:
            self.error(node, "banned", f"{name}() ({BANNED_CALLS[name]}) is not supported inside "
                       "a kernel: the body runs once, while tracing")
        elif isinstance(node.func, ast.Name) and name == "range":
            self.error(node, "python-range", "Python range() unrolls at trace time; use "
                       "tl.range (a runtime loop) or tl.static_range (unrolled)", "warning")
        if name in ASC_V1_APIS:
            self.error(node, "banned", f"{name} is an asc v1 API; use tl.tensor, tl.load and "
                       "tl.store")
        if name == "if_":
            self.branch_lambdas |= {id(a) for a in node.args if isinstance(a, ast.Lambda)}
        if name == "load":
            self.loads += 1
        if name in STORES:
            self.stores += 1
        if name in SHAPE_ARGS and isinstance(node.func, ast.Attribute):
            position, keyword = SHAPE_ARGS[name]
            shape = next((k.value for k in node.keywords if k.arg == keyword), None)
            if shape is None and len(node.args) > position:
                shape = node.args[position]
            culprit = None if shape is None else self._runtime_in_shape(shape)
            if culprit:
                self.error(node, "constexpr-shape", f"the shape of {name}() reads the runtime "
                           f"value '{culprit}'; tile shapes are static: use ConstExpr "
                           "parameters, literals or module constants")
        self.generic_visit(node)

    def _banned(self, what, why):
        def visit(node):
            self.error(node, "banned", f"{what} is not supported inside a kernel ({why})")
            self.generic_visit(node)
        return visit

    def visit_Lambda(self, node):  # noqa: N802
        if id(node) in self.branch_lambdas:
            self.generic_visit(node)
        else:
            self._banned("lambda", "only as a tl.if_ branch; else define a helper function")(node)

    def visit_Try(self, node):  # noqa: N802
        self._banned("try/except", "nothing can be caught at run time")(node)

    visit_TryStar = visit_Try  # noqa: N815

    def visit_Break(self, node):  # noqa: N802
        self._banned("break", "runtime loops have no early exit; use a mask or tl.if_")(node)

    def visit_Continue(self, node):  # noqa: N802
        self._banned("continue", "the body is traced once; guard the work instead")(node)

    def visit_Import(self, node):  # noqa: N802
        self._banned("import", "import at module level")(node)

    visit_ImportFrom = visit_Import  # noqa: N815

    def visit_Yield(self, node):  # noqa: N802
        self._banned("yield", "generators cannot be traced")(node)

    visit_YieldFrom = visit_Await = visit_Yield  # noqa: N815

    def visit_Global(self, node):  # noqa: N802
        self._banned("global/nonlocal", "a kernel writes only through tensors")(node)

    visit_Nonlocal = visit_Global  # noqa: N815


def _host_nodes(tree, kernels):
    """Every node outside the jit functions."""
    inside = {id(n) for k in kernels for n in ast.walk(k)}
    return [n for n in ast.walk(tree) if id(n) not in inside]


def _is_main_guard(node):
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    parts = [node.test.left, *node.test.comparators]
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)


def check_source(source, file):
    """The findings of one file's text, in line order."""
    findings = []

    def report(line, severity, rule, message):
        findings.append(Finding(file, line, severity, rule, message))

    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as e:
        report(e.lineno or 1, "error", "syntax", f"invalid Python: {e.msg}")
        return findings
    kernels = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and any(_is_jit_decorator(d) for d in n.decorator_list)]
    if not kernels:
        report(1, "error", "jit-kernel", "no kernel: decorate a function with @tl.jit")
    loads = stores = 0
    for kernel in kernels:
        checker = _KernelChecker(report, kernel)
        for stmt in kernel.body:
            checker.visit(stmt)
        loads, stores = loads + checker.loads, stores + checker.stores
    end = max((getattr(n, "lineno", 1) for n in ast.walk(tree)), default=1)
    if kernels and not stores:
        report(kernels[0].lineno, "error", "store", "no kernel stores its result: call "
               "tl.store(tile, tensor, offsets=...) (or tl.atomic_*)")
    if kernels and not loads:
        report(kernels[0].lineno, "warning", "load", "no kernel loads an input (tl.load)")
    host = _host_nodes(tree, kernels)
    calls = [n for n in host if isinstance(n, ast.Call)]
    if kernels and not any(isinstance(c.func, ast.Subscript) for c in calls):
        report(end, "error", "launch", "no launch: call the kernel as kernel[core_num](args...) "
               "from host code")
    if not any(_call_name(c) in NUMERIC_CHECKS for c in calls):
        report(end, "error", "numeric-check", "no numerical check: compare the output with a "
               "numpy reference (np.testing.assert_allclose(out, ref, rtol=..., atol=...))")
    if not any(_is_main_guard(n) for n in tree.body):
        report(end, "error", "host-driver", "no host driver: add `if __name__ == \"__main__\":` "
               "that runs the kernel and checks it")
    return sorted(findings, key=lambda f: (f.line, f.rule))


def check_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        return [Finding(str(path), 1, "error", "syntax", f"cannot read the file: {e}")]
    return check_source(source, str(path))


def main(args):
    """``check [--json] FILE...``; returns the exit status."""
    as_json = "--json" in args
    files = [a for a in args if a != "--json"]
    unknown = [a for a in files if a.startswith("-")]
    if unknown or not files:
        what = f"unknown option '{unknown[0]}'" if unknown else "no FILE given"
        print(f"tileops check: {what} (usage: tileops check [--json] FILE...)", file=sys.stderr)
        return 2
    findings = [f for path in files for f in check_file(path)]
    errors = sum(f.severity == "error" for f in findings)
    if as_json:
        json.dump({"files": files, "errors": errors,
                   "warnings": len(findings) - errors,
                   "findings": [asdict(f) for f in findings]}, sys.stdout, indent=2)
        print()
    else:
        for f in findings:
            print(f)
        print(f"tileops check: {len(files)} file(s), {errors} error(s), "
              f"{len(findings) - errors} warning(s)")
    return 1 if errors else 0
