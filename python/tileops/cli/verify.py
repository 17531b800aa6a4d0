"""``tileops verify FILE``: the static check, then the file's tests on the interp and cpu
backends; writes the verification record verification.md + verification.json next to FILE.

The tests are the test_*.py files next to FILE (pytest), else FILE's ``__main__`` driver. The
backend is chosen as tileops.tl chooses it: TILEOPS_TL_BACKEND=interp|cpu in the environment of
each run (what ``backend="auto"`` picks; an explicit ``backend=`` in the code still wins)."""

import ast
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tileops.cli import check as static_check

BACKENDS = ["interp", "cpu"]
RUN_TIMEOUT_S = 900


def find_compiler():
    """The cpu backend's compiler as src/tl/cpu/compiler.cc finds it, or None."""
    cxx = os.environ.get("TILEOPS_CXX")
    if cxx is not None:
        return (shutil.which(cxx) or (cxx if os.access(cxx, os.X_OK) else None)) if cxx else None
    return shutil.which("c++")


def _first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0] if out else None


def versions():
    found = {"python": platform.python_version(), "executable": sys.executable}
    for module in ("tileops", "numpy", "pytest"):
        try:
            found[module] = __import__(module).__version__
        except Exception:  # noqa: BLE001 - absent or broken: recorded, not fatal
            found[module] = None
    try:  # optional: its metadata rather than a slow import
        found["torch"] = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        found["torch"] = None
    compiler = find_compiler()
    found["compiler"] = _first_line([compiler, "--version"]) if compiler else None
    return found


def tolerances(paths):
    """The rtol/atol of every numpy comparison in `paths`, as written."""
    found = []
    for path in paths:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and static_check._call_name(node) in \
                    static_check.NUMERIC_CHECKS:
                entry = {"where": f"{path.name}:{node.lineno}",
                         "check": static_check._call_name(node)}
                entry.update({k.arg: ast.unparse(k.value) for k in node.keywords
                              if k.arg in ("rtol", "atol", "decimal")})
                found.append(entry)
    return found


def _junit_counts(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    return {k: sum(int(s.get(k, 0)) for s in suites)
            for k in ("tests", "failures", "errors", "skipped")}


def _run(argv, cwd, backend):
    env = dict(os.environ, TILEOPS_TL_BACKEND=backend)
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding tileops/
    env["PYTHONPATH"] = os.pathsep.join(p for p in [package_root, env.get("PYTHONPATH")] if p)
    start = time.monotonic()
    try:
        result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=RUN_TIMEOUT_S)
        rc, output = result.returncode, result.stdout + result.stderr
    except subprocess.TimeoutExpired as e:
        rc, output = None, f"timed out after {RUN_TIMEOUT_S} s\n{e.stdout or ''}"
    return rc, output, round(time.monotonic() - start, 2)


def run_backend(target, tests, backend):
    """One backend's runtime check: a dict with status PASS/FAIL/SKIP and its evidence."""
    entry = {"check": f"runtime on {backend}", "backend": backend}
    if backend == "cpu" and find_compiler() is None:
        entry.update(status="SKIP", reason="no C++ compiler for the cpu backend (c++ on PATH or "
                     "$TILEOPS_CXX): apt-get install g++")
        return entry
    if tests:
        with tempfile.TemporaryDirectory() as tmp:
            junit = Path(tmp) / "junit.xml"
            argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", *[t.name for t in tests]]
            rc, output, seconds = _run(argv, target.parent, backend)
            counts = _junit_counts(junit)
        entry.update(command=" ".join(["pytest", *[t.name for t in tests]]), seconds=seconds,
                     counts=counts)
        passed = rc == 0 and counts is not None and counts["tests"] > counts["skipped"]
        if rc == 0 and not passed:
            output += "\nno test ran"
    else:
        rc, output, seconds = _run([sys.executable, target.name], target.parent, backend)
        entry.update(command=f"python {target.name}", seconds=seconds)
        passed = rc == 0
    entry["status"] = "PASS" if passed else "FAIL"
    entry["exit_status"] = rc
    if not passed:
        entry["output_tail"] = "\n".join(output.strip().splitlines()[-40:])
    return entry


def static_entries(findings):
    """One entry per rule of the static check."""
    entries = []
    for rule in ["syntax", "jit-kernel", "banned", "python-range", "load", "store",
                 "constexpr-shape", "launch", "numeric-check", "host-driver"]:
        hits = [f for f in findings if f.rule == rule]
        errors = [f for f in hits if f.severity == "error"]
        entries.append({"check": f"static: {rule}", "status": "FAIL" if errors else "PASS",
                        "findings": [str(f) for f in hits]})
    return entries


def write_record(target, record):
    json_path = target.parent / "verification.json"
    json_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    lines = [f"# Verification of {target.name}: {record['result']}", "",
             f"- time: {record['time']} ({record['seconds']} s)",
             f"- backends: {', '.join(record['backends'])}",
             f"- tests: {', '.join(record['tests']) or target.name + ' (__main__ driver)'}",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in record["versions"].items()), "",
             "| check | status | detail |", "|---|---|---|"]
    for c in record["checks"]:
        detail = c.get("reason") or "; ".join(c.get("findings", [])) or c.get("command", "")
        if c.get("counts"):
            detail += " ({tests} tests, {failures} failed, {errors} errors, {skipped} skipped)" \
                .format(**c["counts"])
        lines.append(f"| {c['check']} | {c['status']} | {detail.replace('|', '/')} |")
    lines += ["", "## Tolerances", ""]
    lines += [f"- {t['where']}: {t['check']}(" + ", ".join(
        f"{k}={t[k]}" for k in ("rtol", "atol", "decimal") if k in t) + ")"
        for t in record["tolerances"]] or ["- none found"]
    for c in record["checks"]:
        if c.get("output_tail"):
            lines += ["", f"## Output of {c['check']}", "", "```", c["output_tail"], "```"]
    (target.parent / "verification.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return json_path


def verify(path):
    """Runs the checks and writes the record; returns it."""
    start = time.monotonic()
    target = Path(path).resolve()
    findings = static_check.check_file(target)
    checks = static_entries(findings)
    tests = sorted(p for p in target.parent.glob("test_*.py") if p != target)
    if any(f.severity == "error" for f in findings):
        checks += [{"check": f"runtime on {b}", "backend": b, "status": "SKIP",
                    "reason": "the static check failed"} for b in BACKENDS]
    else:
        checks += [run_backend(target, tests, b) for b in BACKENDS]
    ran = [c for c in checks if c["check"].startswith("runtime") and c["status"] != "SKIP"]
    failed = any(c["status"] == "FAIL" for c in checks)
    record = {
        "file": target.name,
        "result": "FAIL" if failed or not ran else "PASS",
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - start, 2),
        "backends": [c["backend"] for c in ran],
        "tests": [t.name for t in tests],
        "versions": versions(),
        "tolerances": tolerances([target, *tests]),
        "checks": checks,
    }
    write_record(target, record)
    return record


def main(args):
    if len(args) != 1 or args[0].startswith("-"):
        print("tileops verify: expected one FILE (usage: tileops verify FILE)", file=sys.stderr)
        return 2
    if not Path(args[0]).is_file():
        print(f"tileops verify: {args[0]} is not a file", file=sys.stderr)
        return 1
    record = verify(args[0])
    for c in record["checks"]:
        detail = c.get("reason") or "; ".join(c.get("findings", []))
        print(f"{c['status']:4}  {c['check']}" + (f"  ({detail})" if detail else ""))
        if c.get("output_tail"):
            print("      " + c["output_tail"].replace("\n", "\n      "))
    where = Path(args[0]).resolve().parent
    print(f"tileops verify: {record['result']}; record in {where / 'verification.md'} and "
          f"{where / 'verification.json'}")
    return 0 if record["result"] == "PASS" else 1
