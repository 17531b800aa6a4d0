"""bench/llamacpp_report.py's optional parts: it skips (exit 0, saying why) without node or the
pinned node-llama-cpp, and runs the int8/int4 rows only when llama_generate lists --quantize."""
import json
import os
import stat
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import llamacpp_report as report  # noqa: E402


def test_skips_without_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(report, "PACKAGE_DIR", str(tmp_path))
    monkeypatch.setattr(report.shutil, "which", lambda name: None)
    assert report.llamacpp_missing() == "node is not installed"
    monkeypatch.setattr(report.shutil, "which", lambda name: "/usr/bin/" + name)
    assert "node-llama-cpp is not installed in bench/.llamacpp" in report.llamacpp_missing()
    monkeypatch.setattr(sys, "argv", ["llamacpp_report.py", "--preset", "tiny"])
    assert report.main() == 0
    assert "skipped, llama.cpp is optional" in capsys.readouterr().out


def test_refuses_another_package_version(tmp_path, monkeypatch):
    manifest = tmp_path / "node_modules" / "node-llama-cpp" / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"version": "3.0.0"}))
    monkeypatch.setattr(report, "PACKAGE_DIR", str(tmp_path))
    monkeypatch.setattr(report.shutil, "which", lambda name: "/usr/bin/" + name)
    assert "holds node-llama-cpp 3.0.0, the report pins 3.21.1" in report.llamacpp_missing()


def fake_binary(path, help_text):
    path.write_text(f"#!/bin/sh\ncat <<'END'\n{help_text}END\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_quantize_rows_follow_the_help(tmp_path):
    without = fake_binary(tmp_path / "a", "options:\n  --no-pack (linear over [N, K])\n")
    assert report.quantize_choices(without) == set()
    with_q = fake_binary(tmp_path / "b", "options:\n  --quantize int8|int4 (weights at load)\n")
    assert report.quantize_choices(with_q) == {"int8", "int4"}
    int8_only = fake_binary(tmp_path / "c", "  --seed N --quantize {int8} (weights at load)\n")
    assert report.quantize_choices(int8_only) == {"int8"}
