"""The kernel-author workflow as commands (docs/author-workflow.md): `tileops new` scaffolds a
project that passes `check` and `verify` as generated; `check` finds each planted error at its
line; `verify` writes the record; `env` reports what is missing with its fix. Commands run both
as `python -m tileops` and as the built `tileops` executable (found as test_cli_errors finds
it: a binary not built fails its tests, saying so)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli_errors import binary
from tileops.cli import check, new

KERNEL = new.KERNEL.format(name="k")
PACKAGE_ROOT = str(Path(new.__file__).resolve().parents[2])  # holds tileops/, whatever the cwd


def python_m(*args, cwd=None, env=None):
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [PACKAGE_ROOT, env.get("PYTHONPATH")] if p)
    return subprocess.run([sys.executable, "-m", "tileops", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def executable(*args, cwd=None, env=None):
    return subprocess.run([str(binary("tileops")), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def line_of(source, text):
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_scaffold_passes_new_check_verify_through_the_executable(tmp_path):
    """The acceptance: tileops new k && tileops check k/kernel.py && tileops verify ..."""
    assert executable("new", "k", cwd=tmp_path).returncode == 0
    result = executable("check", "k/kernel.py", cwd=tmp_path)
    assert result.returncode == 0 and "0 error(s), 0 warning(s)" in result.stdout, result
    result = executable("verify", "k/kernel.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads((tmp_path / "k" / "verification.json").read_text())
    assert record["result"] == "PASS" and record["backends"] == ["interp", "cpu"]
    runtime = {c["backend"]: c for c in record["checks"] if "backend" in c}
    for backend in ("interp", "cpu"):
        assert runtime[backend]["status"] == "PASS"
        assert runtime[backend]["counts"]["tests"] == 4  # one backend per run, 4 sizes
    assert {t["where"] for t in record["tolerances"]} >= {"test_k.py:25"}
    assert record["versions"]["numpy"] and record["versions"]["tileops"]
    assert "| runtime on cpu | PASS |" in (tmp_path / "k" / "verification.md").read_text()


def test_scaffold_runs_as_a_script_and_under_pytest(tmp_path):
    assert python_m("new", "scaled", cwd=tmp_path).returncode == 0
    project = tmp_path / "scaled"
    assert sorted(p.name for p in project.iterdir()) == ["README.md", "kernel.py",
                                                         "test_scaled.py"]
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    result = subprocess.run([sys.executable, "kernel.py", "--backend", "interp", "--n", "517"],
                            cwd=project, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "517 elements on interp: PASS" in result.stdout, result


@pytest.mark.parametrize("name", ["1x", "with-dash", "class", ""])
def test_new_refuses_names_that_are_not_identifiers(tmp_path, name):
    result = python_m("new", name, cwd=tmp_path)
    assert result.returncode == 1 and "identifier" in result.stderr, result
    assert not any(tmp_path.iterdir())


def test_new_refuses_an_existing_directory(tmp_path):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "mine.txt").write_text("keep")
    result = executable("new", "k", cwd=tmp_path)
    assert result.returncode == 1 and "already exists" in result.stderr, result
    assert [p.name for p in (tmp_path / "k").iterdir()] == ["mine.txt"]


LOOP = "        tl.store(xs * alpha + bs, ty, offsets=[i * tile])"
LOADS = ("xs = tl.load(tx, [tile], offsets=[i * tile])\n"
         "        bs = tl.load(tb, [tile], offsets=[i * tile])")

# (rule, severity, what to replace, its replacement, text of the line the finding names)
PLANTED = [
    ("syntax", "error", "def main():", "def main(:", "def main(:"),
    ("jit-kernel", "error", "@tl.jit\n", "", None),
    ("banned", "error", LOOP, LOOP + "\n        print(i)", "print(i)"),
    ("banned", "error", LOOP, LOOP + "\n        import math", "import math"),
    ("banned", "error", LOOP, LOOP + "\n        f = lambda v: v", "lambda"),
    ("banned", "error", LOOP, "        try:\n    " + LOOP + "\n        except ValueError:\n"
     "            pass", "try:"),
    ("banned", "error", LOOP, LOOP + "\n        break", "break"),
    ("banned", "error", LOOP, LOOP + "\n        continue", "continue"),
    ("banned", "error", LOOP, LOOP + "\n        tl.data_copy(xs, ty)", "data_copy"),
    ("banned", "error", LOOP, LOOP + "\n        global TILE", "global TILE"),
    ("python-range", "warning", "tl.range(tl.block_idx()", "range(tl.block_idx()", "range("),
    ("store", "error", LOOP, "        ys = xs * alpha + bs", "def k_kernel("),
    ("load", "warning", LOADS, "xs = tl.full([tile], 1.0, tl.float32)\n        bs = xs",
     "def k_kernel("),
    ("launch", "error", "_KERNELS[backend][CORE_NUM](", "_KERNELS[backend].fn(", None),
    ("numeric-check", "error", "np.testing.assert_allclose(", "print(", None),
    ("host-driver", "error", 'if __name__ == "__main__":\n    main()', "main()", None),
    ("constexpr-shape", "error", "tl.load(tx, [tile]", "tl.load(tx, [n]", "tl.load(tx, [n]"),
    ("constexpr-shape", "error", "tl.load(tx, [tile]", "tl.load(tx, [tx.shape[0]]", "tx.shape"),
    ("constexpr-shape", "error", "xs = tl.load(tx, [tile]", "m = n // 2\n        xs = "
     "tl.load(tx, [m]", "[m]"),
    ("constexpr-shape", "error", "tl.load(tb, [tile]", "tl.load(tb, [tl.block_num() * 4]",
     "tl.block_num() * 4"),
]


@pytest.mark.parametrize("rule,severity,old,planted,line_text", PLANTED,
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(PLANTED)])
def test_check_finds_each_planted_error(tmp_path, rule, severity, old, planted, line_text):
    assert old in KERNEL, old
    source = KERNEL.replace(old, planted, 1)
    path = tmp_path / "kernel.py"
    path.write_text(source)
    findings = check.check_file(path)
    hits = [f for f in findings if f.rule == rule]
    assert [f.severity for f in hits] == [severity], findings
    expected = line_of(source, line_text) if line_text else len(source.splitlines()) if \
        rule in ("launch", "numeric-check", "host-driver") else 1
    assert hits[0].line == expected, (hits[0], expected)
    others = [f for f in findings if f.rule != rule and f.severity == "error"]
    assert others == [] or rule in ("syntax", "jit-kernel"), others
    result = python_m("check", str(path))
    assert result.returncode == (1 if severity == "error" else 0), result
    assert f"{path}:{expected}: {severity}: " in result.stdout and f"[{rule}]" in result.stdout


def test_constexpr_shapes_tile_attributes_and_branch_lambdas_are_accepted(tmp_path):
    source = KERNEL.replace("tl.load(tb, [tile], offsets=[i * tile])",
                            "tl.reshape(tl.load(tb, [tile // 2, 2], offsets=[i * tile, 0]), "
                            "xs.shape)")
    source = source.replace(LOOP, LOOP + "\n        tl.if_(n > 0, lambda: tl.store(xs, ty, "
                            "offsets=[i * tile]))")
    path = tmp_path / "kernel.py"
    path.write_text(source)
    assert check.check_file(path) == []


def test_check_json_lists_findings_of_every_file(tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(KERNEL)
    bad.write_text(KERNEL.replace(LOOP, LOOP + "\n        print(i)"))
    result = executable("check", "--json", str(good), str(bad))
    assert result.returncode == 1, result
    report = json.loads(result.stdout)
    assert report["errors"] == 1 and report["files"] == [str(good), str(bad)]
    [finding] = report["findings"]
    assert finding["file"] == str(bad) and finding["rule"] == "banned"
    assert finding["line"] == line_of(bad.read_text(), "print(i)")


@pytest.mark.parametrize("args,words", [([], "no FILE"), (["--strict", "x.py"], "--strict")])
def test_check_usage_errors(args, words):
    result = python_m("check", *args)
    assert result.returncode == 2 and words in result.stderr, result


def test_verify_records_a_failing_kernel_on_both_backends(tmp_path):
    assert python_m("new", "k", cwd=tmp_path).returncode == 0
    kernel = tmp_path / "k" / "kernel.py"
    kernel.write_text(kernel.read_text().replace("xs * alpha + bs", "xs * alpha - bs"))
    result = python_m("verify", str(kernel))
    assert result.returncode == 1, result.stdout
    record = json.loads((tmp_path / "k" / "verification.json").read_text())
    assert record["result"] == "FAIL"
    runtime = [c for c in record["checks"] if "backend" in c]
    assert [(c["backend"], c["status"]) for c in runtime] == [("interp", "FAIL"), ("cpu", "FAIL")]
    assert all("Mismatched elements" in c["output_tail"] for c in runtime)


def test_verify_skips_the_runtime_when_the_static_check_fails(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL.replace(LOOP, LOOP + "\n        print(i)"))
    result = executable("verify", str(path))
    assert result.returncode == 1
    record = json.loads((tmp_path / "verification.json").read_text())
    statuses = {c["check"]: c["status"] for c in record["checks"]}
    assert statuses["static: banned"] == "FAIL" and statuses["static: store"] == "PASS"
    assert statuses["runtime on interp"] == statuses["runtime on cpu"] == "SKIP"
    assert "| static: banned | FAIL |" in (tmp_path / "verification.md").read_text()


def test_verify_runs_the_main_driver_without_tests(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL)
    assert python_m("verify", str(path)).returncode == 0
    record = json.loads((tmp_path / "verification.json").read_text())
    assert [c["command"] for c in record["checks"] if "backend" in c] == ["python kernel.py"] * 2


def test_verify_without_a_compiler_skips_cpu_saying_why(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL)
    result = python_m("verify", str(path), env=dict(os.environ, TILEOPS_CXX=""))
    assert result.returncode == 0, result.stdout
    record = json.loads((tmp_path / "verification.json").read_text())
    cpu = next(c for c in record["checks"] if c.get("backend") == "cpu")
    assert cpu["status"] == "SKIP" and "apt-get install g++" in cpu["reason"]
    assert record["backends"] == ["interp"]


def test_env_json_is_the_environment_record(tmp_path):
    result = python_m("env", "--json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["ok"] and facts["problems"] == []
    assert facts["backends"] == {"interp": True, "cpu": True, "cuda": False}
    assert facts["compiler"]["test_compile"] == "ok" and facts["compiler"]["version"]
    assert facts["cache"]["private"] and facts["cpu"]["threads"] >= 1
    assert facts["python"]["numpy"] and facts["python"]["pytest"]
    # Private as the JIT cache means it: ours and writable by no one else (a 0755 directory made
    # by another tool, as CTest's, qualifies; tileops makes its own 0700).
    cache = os.stat(facts["cache"]["path"])
    assert cache.st_uid == os.geteuid() and cache.st_mode & 0o022 == 0
    out = tmp_path / "environment.json"
    result = executable("env", "-o", str(out))  # the human report, and the record in a file
    assert result.returncode == 0 and "backends: interp ok, cpu ok" in result.stdout
    recorded = json.loads(out.read_text())
    assert recorded == dict(facts, cpu=recorded["cpu"])  # TILEOPS_NUM_THREADS may differ


@pytest.mark.parametrize("variable,value,words", [
    ("TILEOPS_CXX", "", ["no C++ compiler", "apt-get install g++"]),
    ("TILEOPS_PYTHON", "/nonexistent/python3", ["does not run", "TILEOPS_PYTHON"]),
    ("TILEOPS_CACHE_DIR", "shared", ["writable by group or others", "mode 0700"]),
])
def test_env_names_what_is_missing_and_its_fix(tmp_path, variable, value, words):
    if variable == "TILEOPS_CACHE_DIR":
        value = tmp_path / value
        value.mkdir(mode=0o777)
        value.chmod(0o777)
    result = executable("env", env=dict(os.environ, **{variable: str(value)}))
    assert result.returncode == 1, result.stderr
    assert "tileops env: " in result.stderr and "fix: " in result.stderr
    for w in words:
        assert w in result.stderr, result.stderr
    assert "backends: interp ok" in result.stdout  # the report is still printed


def test_help_lists_the_workflow_commands():
    result = executable("help")
    for command in ("new NAME", "check [--json] FILE...", "verify FILE", "env [--json]"):
        assert command in result.stdout


def test_extension_cli_points_python_commands_to_python():
    from tileops import _C

    assert _C.run_cli(["check", "x.py"]) == 2


def test_environment_names_the_package_for_the_executable():
    # The executable finds the source tree's package whatever PYTHONPATH says.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = executable("check", "--json", str(Path(__file__)), env=env)
    assert result.returncode == 1 and json.loads(result.stdout)["errors"] >= 1, result.stderr


# --- the capability matrix (scripts/capabilities.py) ---------------------------------------

CAPABILITIES = Path(__file__).resolve().parents[2] / "scripts" / "capabilities.py"


def junit(path, cases, ctest=False):
    """A JUnit file of (name, classname, outcome) cases, as CTest or pytest write them."""
    rows = []
    for name, classname, outcome in cases:
        child = {"fail": '<failure message="x"/>', "skip": '<skipped message="x"/>'}.get(
            outcome, "")
        status = f' status="{"fail" if outcome == "fail" else "run"}"' if ctest else ""
        rows.append(f'<testcase name="{name}" classname="{classname}"{status}>{child}</testcase>')
    path.write_text(f'<?xml version="1.0"?><testsuite tests="{len(rows)}">{"".join(rows)}'
                    "</testsuite>")
    return path


def capabilities(*args, cwd=None):
    return subprocess.run([sys.executable, str(CAPABILITIES), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=60)


def cells(text):
    """(construct, dtype) -> [interp, cpu, cuda] of the matrix's rows."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            parts = [p.strip() for p in line.strip("|").split("|")]
            rows[(parts[0].strip("`"), parts[1])] = parts[2:]
    return rows


def test_capability_matrix_maps_test_names_to_cells(tmp_path):
    ctest = junit(tmp_path / "ctest.xml", [
        ("tl/tl_golden_test", "tl/tl_golden_test", "pass"),
        ("tl/tl_golden_test_cpu", "tl/tl_golden_test_cpu", "fail"),
        ("python/pytest", "python/pytest", "fail"),  # not tile-language evidence
    ], ctest=True)
    # Two shards' files (CTest's python/pytest_*): the evidence of both counts.
    shard_1 = junit(tmp_path / "pytest-1.xml", [
        ("test_unary[exp]", "python.tests.test_tl_ops", "pass"),
        ("test_unary[log]", "python.tests.test_tl_ops", "fail"),
        ("test_unary[sin]", "python.tests.test_tl_ops", "skip"),
    ])
    shard_2 = junit(tmp_path / "pytest-2.xml", [
        ("test_vadd[float16-1000]", "python.tests.test_tl_golden", "pass"),
        ("test_directed_rounding_into_hifloat8_steps_by_value[interp]",
         "python.tests.test_tl_ops", "pass"),
    ])
    out = tmp_path / "capabilities.md"
    result = capabilities("--ctest", ctest, "--pytest", shard_1, shard_2, "--output", out)
    assert result.returncode == 0, result.stderr
    rows = cells(out.read_text())
    assert rows[("exp", "any")] == ["untested", "pass", "untested"]  # auto: cpu
    assert rows[("log", "any")] == ["untested", "**FAIL**", "untested"]
    assert rows[("sin", "any")] == ["untested", "untested", "untested"]  # a skip is no evidence
    assert rows[("add", "float16")][1] == "pass"  # the dtype from the id
    # tl_golden_test covers jit: passed on interp, failed on cpu.
    assert rows[("jit", "any")] == ["pass", "**FAIL**", "untested"]
    assert ("exp", "float32") not in rows and ("cuda", "any") not in rows


def test_capability_matrix_is_deterministic_and_checked(tmp_path):
    cases = [(f"test_unary[{n}]", "test_tl_ops", "pass") for n in ("exp", "tanh", "abs")]
    a = junit(tmp_path / "a.xml", cases)
    b = junit(tmp_path / "b.xml", cases[::-1])
    ctest = junit(tmp_path / "ctest.xml", [], ctest=True)
    out = tmp_path / "capabilities.md"
    assert capabilities("--ctest", ctest, "--pytest", a, "--output", out).returncode == 0
    first = out.read_text()
    assert capabilities("--ctest", ctest, "--pytest", b, "--check", "--output",
                        out).returncode == 0
    assert cells(first)[("abs", "any")] == ["untested", "pass", "untested"]
    failed = [(n, c, "fail" if "exp" in n else o) for n, c, o in cases]
    stale = capabilities("--ctest", ctest, "--pytest", junit(tmp_path / "c.xml", failed),
                         "--check", "--output", out)
    assert stale.returncode == 1 and "is stale" in stale.stderr
    assert "scripts/capabilities.py --ctest" in stale.stderr
    missing = capabilities("--ctest", tmp_path / "none.xml", "--pytest", a, "--check")
    assert missing.returncode == 2 and "run the tests first" in missing.stderr


ASC2_PROGRAM = '''import numpy as np
import asc
import asc2


@asc2.jit(always_compile=True)
def abs_kernel(x_ptr: asc.GlobalAddress, out_ptr: asc.GlobalAddress, size: int,
               tile_size: asc.ConstExpr[int], tile_per_block: asc.ConstExpr[int]):
    x_gm = asc2.tensor(x_ptr, [size])
    out_gm = asc2.tensor(out_ptr, [size])
    base_offset = asc2.block_idx() * tile_size * tile_per_block
    for i in asc2.range(tile_per_block, unroll_factor=2, parallel=True):
        tile_offset = base_offset + i * tile_size
        x = asc2.load(x_gm, [tile_size], offsets=[tile_offset])
        asc2.store(asc2.abs(x), out_gm, offsets=[tile_offset])


def test_abs():
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    abs_kernel[16](x, out, x.size, 128, asc.ceildiv(asc.ceildiv(x.size, 128), 16))
    np.testing.assert_allclose(out, np.abs(x))


if __name__ == "__main__":
    test_abs()
'''


def test_an_asc2_program_of_the_seeds_passes_check(tmp_path):
    path = tmp_path / "abs_f16.py"
    path.write_text(ASC2_PROGRAM)
    assert check.check_file(path) == []
    path.write_text(ASC2_PROGRAM.replace("[tile_size], offsets", "[size], offsets"))
    assert [f.rule for f in check.check_file(path)] == ["constexpr-shape"]
