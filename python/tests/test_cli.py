"""``python -m tileops``: usage errors are one line on stderr with status 2, bad option values
one line with status 1 (never a traceback), and a bad TILEOPS_NUM_THREADS is ignored with a
notice."""

import os
import subprocess
import sys

import pytest

TINY = ["--decoder-only", "--layers", "1", "--hidden", "64", "--heads", "2", "--kv-heads", "1",
        "--head-size", "32", "--intermediate", "128", "--vocab", "100", "--prompts", "1",
        "--prompt-tokens", "4"]


def run(*args, threads="1"):
    env = dict(os.environ, TILEOPS_NUM_THREADS=threads)
    return subprocess.run([sys.executable, "-m", "tileops", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("args,status,words", [
    (["demo", "--top-p", "x"], 1, ["tileops demo", "--top-p", "'x'"]),
    (["demo", "--operators-only", "--decoder-only"], 2, ["exclude each other"]),
    (TINY + ["--new-tokens", "0"], 1, ["--new-tokens", "[1,"]),
    (TINY + ["--new-tokens", "2", "--layers", "9223372036854775807"], 1, ["layers", "<= 65536"]),
    (TINY + ["--new-tokens", "2", "--vocab", "16777216", "--hidden", "16777216"], 1,
     ["GiB", "memory"]),
    (["env", "--bogus"], 2, ["unknown option '--bogus'"]),
    (["bogus"], 2, ["unknown command 'bogus'"]),
])
def test_bad_command_lines(args, status, words):
    args = ["demo", *args] if args[0].startswith("--") else args
    result = run(*args)
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, \
        result.stderr
    assert not result.stderr.startswith("tileops: tileops"), result.stderr
    for w in words:
        assert w in result.stderr, result.stderr


def test_tiny_decoder_runs():
    result = run(*(["demo"] + TINY + ["--new-tokens", "2"]))
    assert result.returncode == 0, result.stderr
    assert "prefill: 4 tokens" in result.stdout and "decode:" in result.stdout


@pytest.mark.parametrize("value", ["abc", "0", "-3", "100000"])
def test_bad_thread_count_is_ignored_with_a_notice(value):
    result = run("env", threads=value)
    assert result.returncode == 0, result.stderr
    assert f"ignoring TILEOPS_NUM_THREADS={value}" in result.stderr
    assert "[1, 4096]" in result.stderr


def test_version_is_the_package_version():
    import tileops
    got = run("--version")
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == f"tileops {tileops.__version__}"
