"""``python -m tileops catalog ...`` and tileops.catalog: every subcommand on the repository's
catalog and on a small copy of it, the index check (including a planted stale index) and the
entry schema errors."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tileops import catalog

REPO_CATALOG = Path(__file__).resolve().parents[2] / "catalog"
KERNEL = "qk_matmul_batched"


def run(*args, root=None, timeout=600):
    extra = ["--root", str(root)] if root is not None else []
    return subprocess.run([sys.executable, "-m", "tileops", "catalog", *extra, *args],
                          capture_output=True, text=True, env=dict(os.environ), timeout=timeout)


@pytest.fixture
def small_catalog(tmp_path):
    """A copy of the catalog holding only qk_matmul_batched, its shapes made tiny."""
    root = tmp_path / "catalog"
    root.mkdir()
    for name in ("__init__.py", "_support.py"):
        shutil.copy(REPO_CATALOG / name, root / name)
    (root / "attention").mkdir()
    shutil.copy(REPO_CATALOG / "attention" / "__init__.py", root / "attention")
    shutil.copytree(REPO_CATALOG / "attention" / KERNEL, root / "attention" / KERNEL,
                    ignore=shutil.ignore_patterns("__pycache__", "verification.*"))
    entry_path = root / "attention" / KERNEL / "entry.json"
    entry = json.loads(entry_path.read_text())
    entry["validated"]["shapes"] = {"interp": [[1, 1, 9, 17, 16]], "cpu": [[1, 2, 33, 65, 32]]}
    entry["bench"] = {"shape": [1, 1, 64, 64, 32], "dtype": "float32"}
    entry_path.write_text(json.dumps(entry))
    catalog.write_index(root)
    return root


def test_repository_index_is_fresh():
    assert catalog.stale_files(REPO_CATALOG) == []


def test_list_names_every_kernel():
    result = run("list")
    assert result.returncode == 0, result.stderr
    names = [e["name"] for e in catalog.load_entries(REPO_CATALOG)]
    assert KERNEL in names and "flash_attn_full" in names
    for name in names:
        assert f"/{name} " in result.stdout


@pytest.mark.parametrize("query,first", [
    ("normalised online softmax attention", "flash_attn_full"),
    ("batched matmul scores", "qk_matmul_batched"),
    ("grouped query attention", "flash_attn_gqa"),
    ("decode attention with a tail", "decode_attn"),
    ("row max and row sum outputs unnormalised", "flash_attn_unnorm"),
])
def test_search_ranks_by_the_entry_fields(query, first):
    result = run("--json", "search", query)
    assert result.returncode == 0, result.stderr
    ranked = json.loads(result.stdout)
    assert ranked[0]["name"] == first, ranked
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)


def test_search_causal_prefers_causal_kernels():
    ranked = catalog.search("causal attention", REPO_CATALOG)
    names = [e["name"] for _, e in ranked]
    # Forward and backward causal kernels tie; every one of them outranks the non-causal ones.
    assert all("causal" in name for name in names[:3]), names
    assert "flash_attn_block32_causal" in names[:3], names
    noncausal = catalog.find("flash_attn_full", REPO_CATALOG)
    assert catalog.score(noncausal, "causal") < 1.0  # "non-causal" is not "causal"


def test_search_without_match_is_status_1():
    result = run("search", "zzzqqq")
    assert result.returncode == 1 and "nothing matches" in result.stderr


def test_show_prints_the_fields():
    result = run("show", KERNEL)
    assert result.returncode == 0, result.stderr
    for field in ("formula:", "stages:", "study_for:", "do_not_copy_when:", "validated:",
                  "tolerances:", "shapes (cpu"):
        assert field in result.stdout


def test_show_unknown_kernel_names_the_known_ones():
    result = run("show", "no_such_kernel")
    assert result.returncode == 1
    assert "no kernel 'no_such_kernel'" in result.stderr and KERNEL in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_runs_both_backends(small_catalog):
    result = run("verify", KERNEL, root=small_catalog)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  runtime on interp" in result.stdout and "PASS  runtime on cpu" in result.stdout
    record = json.loads((small_catalog / "attention" / KERNEL / "verification.json").read_text())
    assert record["result"] == "PASS"


def test_verify_fails_on_a_wrong_kernel(small_catalog):
    kernel = small_catalog / "attention" / KERNEL / "kernel.py"
    kernel.write_text(kernel.read_text().replace("asc2.matmul(q, k.T)", "asc2.matmul(q, k.T) * 2"))
    result = run("verify", KERNEL, root=small_catalog)
    assert result.returncode == 1
    assert "FAIL  runtime on interp" in result.stdout


def test_bench_reports_both_times(small_catalog):
    result = run("--json", "bench", KERNEL, "--repeat", "1", root=small_catalog)
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["kernel"] == KERNEL and row["ms"] > 0 and row["torch_ms"] > 0
    assert row["gflops"] > 0


def test_bench_takes_a_shape(small_catalog):
    result = run("--json", "bench", KERNEL, "--repeat", "1", "--shape", "1,2,48,80,32",
                 root=small_catalog)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["shape"] == [1, 2, 48, 80, 32]
    for bad in ("1,2,48", "1,2,48,80,0", "1,2,x,80,32"):
        result = run("bench", KERNEL, "--shape", bad, root=small_catalog)
        assert result.returncode == 2 and "--shape" in result.stderr, bad


def test_index_check_fails_when_stale(small_catalog):
    assert run("index", "--check", root=small_catalog).returncode == 0
    entry_path = small_catalog / "attention" / KERNEL / "entry.json"
    entry = json.loads(entry_path.read_text())
    entry["summary"] = "a changed summary"
    entry_path.write_text(json.dumps(entry))
    result = run("index", "--check", root=small_catalog)
    assert result.returncode == 1 and "stale" in result.stderr
    assert run("index", root=small_catalog).returncode == 0
    assert run("index", "--check", root=small_catalog).returncode == 0
    assert "a changed summary" in (small_catalog / "INDEX.md").read_text()


def test_index_check_fails_when_missing(small_catalog):
    (small_catalog / "index.json").unlink()
    result = run("index", "--check", root=small_catalog)
    assert result.returncode == 1 and "index.json" in result.stderr


@pytest.mark.parametrize("change,words", [
    (lambda e: e.pop("study_for"), "missing field 'study_for'"),
    (lambda e: e.update(stages=3), "'stages' must be a str"),
    (lambda e: e.update(colour="red"), "unknown field(s) ['colour']"),
    (lambda e: e.update(name="other"), "the folder is attention/qk_matmul_batched"),
    (lambda e: e["validated"]["shapes"].pop("cpu"), "'validated.shapes.cpu' must list shapes"),
    (lambda e: e.update(do_not_copy_when=[]), "'do_not_copy_when' must be a non-empty list"),
])
def test_schema_errors_name_the_field(small_catalog, change, words):
    entry_path = small_catalog / "attention" / KERNEL / "entry.json"
    entry = json.loads(entry_path.read_text())
    change(entry)
    entry_path.write_text(json.dumps(entry))
    result = run("list", root=small_catalog)
    assert result.returncode == 1 and words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_missing_test_file_is_an_error(small_catalog):
    (small_catalog / "attention" / KERNEL / f"test_{KERNEL}.py").unlink()
    result = run("list", root=small_catalog)
    assert result.returncode == 1 and f"test_{KERNEL}.py is missing" in result.stderr
