"""The built CLIs (`tileops` and examples/llama's `llama_generate`) on hostile command lines and
checkpoints: any error is one line on stderr with status 1 (never an abort or a signal), a
usage error one line with status 2.

The binaries are found in TILEOPS_BUILD_DIR, else in the build folder of TILEOPS_EXTENSION_DIR
(build/<preset>/python/tileops), else in build/release; tests of a binary not built are skipped.
"""

import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SIZES = ["--layers", "1", "--hidden", "64", "--heads", "2", "--kv-heads", "1", "--head-size",
         "32", "--intermediate", "128", "--vocab", "100", "--prompts", "1", "--prompt-tokens", "4",
         "--new-tokens", "2"]

CONFIG = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 128,
          "vocab_size": 100, "max_position_embeddings": 64}


def build_dirs():
    if os.environ.get("TILEOPS_BUILD_DIR"):
        yield Path(os.environ["TILEOPS_BUILD_DIR"])
    extension = Path(os.environ.get("TILEOPS_EXTENSION_DIR", ""))
    if extension.parts[-2:] == ("python", "tileops"):
        yield extension.parent.parent
    yield ROOT / "build" / "release"


def binary(relative):
    for d in build_dirs():
        if (d / relative).is_file():
            return d / relative
    pytest.skip(f"{relative} is not built")
    return None


# The decoder's command line of each CLI.
COMMANDS = {"llama_generate": ("examples/llama_generate", []),
            "tileops": ("tileops", ["demo", "--decoder-only"])}


def run(cli, *args):
    relative, prefix = COMMANDS[cli]
    env = dict(os.environ, TILEOPS_NUM_THREADS="1")
    return subprocess.run([str(binary(relative)), *prefix, *args], capture_output=True,
                          text=True, env=env, timeout=120)


def assert_one_line(result, status, *words):
    assert result.returncode == status, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for w in words:
        assert w in lines[0], lines[0]


CLIS = list(COMMANDS)


@pytest.mark.parametrize("cli", CLIS)
def test_tiny_decoder_runs(cli):
    result = run(cli, *SIZES)
    assert result.returncode == 0, result.stderr
    assert "decode:" in result.stdout


@pytest.mark.parametrize("cli", CLIS)
def test_export_to_an_unusable_path_is_one_line(cli, tmp_path):
    # /proc refuses new directories: an uncaught std::filesystem_error aborted llama_generate.
    assert_one_line(run(cli, *SIZES, "--export", "/proc/tileops_cli_test"), 1, "--export")
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_one_line(run(cli, *SIZES, "--export", str(blocker / "dir")), 1, "--export")


@pytest.mark.parametrize("cli", CLIS)
@pytest.mark.parametrize("args,words", [
    (["--layers", "abc"], ["--layers", "'abc'"]),
    (["--prompts", "-3"], ["--prompts", "'-3'"]),
    (["--new-tokens", "99999999999999999999"], ["--new-tokens"]),  # beyond int64
    (["--top-p", "nan"], ["--top-p"]),
    (["--top-p", "-0.5"], ["--top-p"]),
    (["--seed", "-1"], ["--seed"]),
    (["--block-size", "0"], ["--block-size"]),
    (["--head-size", "3"], ["head_size"]),
    (["--kv-heads", "0"], ["kv_heads"]),
    (["--dtype", "int8"], ["dtype"]),
    (["--dtype", "nope"], ["--dtype"]),
    (["--prompt-tokens", "1073741824", "--new-tokens", "1073741824"], ["--new-tokens"]),
    (["--prompts", "1073741824"], ["int32"]),  # the KV cache's block table and offsets
    (["--top-k"], ["needs a value"]),
])
def test_bad_option_values_are_one_line(cli, args, words):
    assert_one_line(run(cli, *SIZES, *args), 1, *words)


@pytest.mark.parametrize("cli", CLIS)
def test_unknown_option_is_one_line(cli):
    assert_one_line(run(cli, *SIZES, "--bogus"), 2, "unknown option '--bogus'")


def test_llama_generate_help():
    result = run("llama_generate", "--help")
    assert result.returncode == 0 and "--weights" in result.stdout, result.stderr


def write_safetensors(path, entries, data_bytes):
    header = json.dumps(entries).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(data_bytes))


@pytest.mark.parametrize("cli", CLIS)
@pytest.mark.parametrize("config,words", [
    (dict(CONFIG, num_attention_heads=0), ["num_attention_heads"]),  # was a SIGFPE
    (dict(CONFIG, max_position_embeddings=2**60), ["max_position_embeddings"]),
    (dict(CONFIG, hidden_size="64"), ["hidden_size"]),
    ([1, 2], ["object"]),
])
def test_bad_config_is_one_line(cli, tmp_path, config, words):
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_safetensors(tmp_path / "model.safetensors", {}, 0)
    result = run(cli, "--prompts", "1", "--prompt-tokens", "4", "--new-tokens", "2", "--weights",
                 str(tmp_path))
    assert_one_line(result, 1, "config.json", *words)


@pytest.mark.parametrize("cli", CLIS)
@pytest.mark.parametrize("entries,data_bytes,words", [
    ({"w": {"dtype": "F32", "shape": [-4, -4], "data_offsets": [0, 64]}}, 64, ["non-negative"]),
    ({"w": {"dtype": "F32", "shape": [2**32, 2**32, 4], "data_offsets": [0, 0]}}, 0,
     ["overflows"]),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
      "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, 24, ["share bytes"]),
])
def test_bad_safetensors_is_one_line(cli, tmp_path, entries, data_bytes, words):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    write_safetensors(tmp_path / "model.safetensors", entries, data_bytes)
    result = run(cli, "--prompts", "1", "--prompt-tokens", "4", "--new-tokens", "2", "--weights",
                 str(tmp_path))
    assert_one_line(result, 1, "model.safetensors", *words)
