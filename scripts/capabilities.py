#!/usr/bin/env python3
"""Builds docs/capabilities.md, the tile-language capability matrix (construct x dtype x
backend: pass / fail / untested), from test evidence: the JUnit XML of a CTest run
(`ctest --output-junit`) and of pytest (`--junitxml`). Never edit the document by hand.

    scripts/capabilities.py --ctest CTEST.xml --pytest PYTEST.xml...           # rewrite the doc
    scripts/capabilities.py --ctest CTEST.xml --pytest PYTEST.xml... --check   # fail when stale

How a test result becomes cells (docs/author-workflow.md, "Capability matrix"):
- Constructs: the `covers:` comments that tools/tl/coverage.py reads. A C++ test file
  (tests/tl/<stem>.cc) covers the names of all its comments; a pytest function the names of the
  comment block right above it. A parametrisation id token that is one of the function's covered
  names narrows that case to it (test_unary[exp] is evidence for exp alone).
- dtype: an id token that names a dtype (test_vadd[float16-1000] -> float16), else "any".
- backend: CTest's tl/<stem> runs with TILEOPS_TL_BACKEND=interp and tl/<stem>_cpu (also _avx2,
  _valgrind) with cpu (tests/CMakeLists.txt); a tl_cpu_* test counts for the backends
  tools/tl/coverage.py gives it. A pytest id token interp or cpu names the backend; otherwise
  the test ran on `auto`, which is cpu wherever tileops was built (the build needs a compiler).
- A cell is fail when any of its evidence failed, pass when some passed, untested otherwise
  (skips are not evidence). Rows are sorted, and there are no times, counts or machine names,
  so the same results give the same file on every machine.
"""
import argparse
import ast
import importlib.util
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "capabilities.md"
BACKENDS = ["interp", "cpu", "cuda"]
DTYPES = ["float64", "float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2",
          "hifloat8", "int64", "int32", "int16", "int8", "uint8", "bool"]
ANY = "any"


def _coverage():
    spec = importlib.util.spec_from_file_location("coverage_tool",
                                                  ROOT / "tools" / "tl" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COVERAGE = _coverage()


def read_junit(path):
    """(name, classname, outcome) of every testcase; outcome pass, fail or skip."""
    root = ET.parse(path).getroot()
    cases = []
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        status = case.get("status", "")
        if tags & {"failure", "error"} or status == "fail":
            outcome = "fail"
        elif "skipped" in tags or status in ("notrun", "disabled"):
            outcome = "skip"
        else:
            outcome = "pass"
        cases.append((case.get("name", ""), case.get("classname", ""), outcome))
    return cases


def cpp_covers():
    """stem -> constructs of every tests/tl/*_test.cc file."""
    return {p.stem: COVERAGE.covers_names(p.read_text(), "//")
            for p in sorted((ROOT / "tests" / "tl").glob("*_test.cc"))}


def python_covers():
    """(module, function) -> constructs of the comment block above each test function."""
    covers = {}
    for path in sorted((ROOT / "python" / "tests").glob("test_tl_*.py")):
        lines = path.read_text().splitlines()
        for node in ast.parse("\n".join(lines)).body:
            if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
                continue
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            start = first
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            block = "\n".join(lines[start:first])
            covers[(path.stem, node.name)] = COVERAGE.covers_names(block, "#")
    return covers


def cpp_evidence(cases):
    covers = cpp_covers()
    for name, _, outcome in cases:
        if not name.startswith("tl/"):
            continue
        run = name[len("tl/"):]
        stems = [s for s in covers if run == s or run.startswith(s + "_")]
        if not stems:
            continue
        stem = max(stems, key=len)
        suffix = run[len(stem):]
        if stem.startswith("tl_cpu_"):
            backends = COVERAGE.backends_of(stem)
        else:
            backends = {"interp"} if suffix == "" else {"cpu"}
        for construct in covers[stem]:
            for backend in backends:
                yield construct, ANY, backend, outcome


def _module_of(classname):
    parts = [p for p in re.split(r"[./]", classname) if p.startswith("test_tl_")]
    return parts[-1] if parts else None


def python_evidence(cases):
    covers = python_covers()
    parsed = []
    for name, classname, outcome in cases:
        module = _module_of(classname)
        function, _, ids = name.partition("[")
        if (module, function) not in covers:
            continue
        tokens = set(ids.rstrip("]").split("-")) if ids else set()
        parsed.append((module, function, tokens, outcome))
    # Names some parametrisation id of the function narrows to: only those ids give them evidence.
    narrowed = {}
    for module, function, tokens, _ in parsed:
        names = tokens & set(covers[(module, function)])
        narrowed.setdefault((module, function), set()).update(names)
    for module, function, tokens, outcome in parsed:
        names = covers[(module, function)]
        own = tokens & set(names)
        constructs = own | (set(names) - narrowed[(module, function)])
        dtypes = [d for d in DTYPES if d in tokens] or [ANY]
        backends = [b for b in BACKENDS if b in tokens] or ["cpu"]
        for construct in constructs:
            for dtype in dtypes:
                for backend in backends:
                    yield construct, dtype, backend, outcome


def matrix(evidence):
    """(construct, dtype) -> backend -> pass/fail."""
    cells = {}
    for construct, dtype, backend, outcome in evidence:
        if outcome == "skip" or construct not in COVERAGE.CONSTRUCTS:
            continue
        row = cells.setdefault((construct, dtype), {})
        row[backend] = "fail" if outcome == "fail" or row.get(backend) == "fail" else "pass"
    return cells


def render(cells):
    order = {c: i for i, c in enumerate(COVERAGE.CONSTRUCTS)}
    dtype_order = {d: i for i, d in enumerate([ANY] + DTYPES)}
    rows = sorted(cells, key=lambda k: (order[k[0]], dtype_order[k[1]]))
    rows += [(c, ANY) for c in COVERAGE.CONSTRUCTS if not any(r[0] == c for r in rows)]
    rows.sort(key=lambda k: (order[k[0]], dtype_order[k[1]]))
    totals = {b: {"pass": 0, "fail": 0, "untested": 0} for b in BACKENDS}
    body = []
    for construct, dtype in rows:
        row = cells.get((construct, dtype), {})
        statuses = [row.get(b, "untested") for b in BACKENDS]
        for b, s in zip(BACKENDS, statuses):
            totals[b][s] += 1
        shown = ["**FAIL**" if s == "fail" else s for s in statuses]
        body.append(f"| `{construct}` | {dtype} | " + " | ".join(shown) + " |")
    summary = "; ".join(f"{b}: {t['pass']} pass, {t['fail']} fail, {t['untested']} untested"
                        for b, t in totals.items())
    head = [
        "# Tile-language capability matrix",
        "",
        "<!-- Generated by scripts/capabilities.py from JUnit XML of CTest and pytest; do not "
        "edit. -->",
        "Generated by `scripts/capabilities.py` from the results of the tests (JUnit XML of "
        "CTest and pytest); never edited by hand. `scripts/test.sh` regenerates it after the "
        "tests and fails when the committed file differs. How test names map to constructs, "
        "dtypes and backends: `docs/author-workflow.md` (\"Capability matrix\"). `any`: the "
        "evidence does not name a dtype (the test covers several, or the construct has none).",
        "",
        f"Rows (construct, dtype): {summary}.",
        "",
        "| construct | dtype | " + " | ".join(BACKENDS) + " |",
        "|---|---|" + "---|" * len(BACKENDS),
    ]
    return "\n".join(head + body) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctest", required=True, type=pathlib.Path,
                        help="JUnit XML of ctest (--output-junit)")
    parser.add_argument("--pytest", required=True, type=pathlib.Path, nargs="+",
                        help="JUnit XML of pytest (--junitxml), one file per shard")
    parser.add_argument("--check", action="store_true",
                        help="fail when docs/capabilities.md differs instead of writing it")
    parser.add_argument("--output", type=pathlib.Path, default=DOC)
    args = parser.parse_args(argv)
    for path in (args.ctest, *args.pytest):
        if not path.is_file():
            parser.error(f"no JUnit XML at {path}: run the tests first (scripts/test.sh)")
    evidence = list(cpp_evidence(read_junit(args.ctest)))
    for path in args.pytest:
        evidence += python_evidence(read_junit(path))
    text = render(matrix(evidence))
    if args.check:
        current = args.output.read_text() if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale: regenerate it from this run's results with\n"
                  f"  scripts/capabilities.py --ctest {args.ctest} --pytest "
                  f"{' '.join(str(p) for p in args.pytest)}\n"
                  "and commit it (a failing test shows as FAIL: fix the test first)",
                  file=sys.stderr)
            return 1
        print(f"capabilities: {args.output.name} is up to date")
        return 0
    args.output.write_text(text)
    print(f"capabilities: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
