"""`llama_generate --weights DIR --prompt TEXT` end to end on a tiny checkpoint (written by
`llama_generate --export`) with each tokenizer format: a SentencePiece model trained here with
Debian's spm_train, and the hand-written byte-level BPE tests/examples/data/tiny_tokenizer.json.

The printed text must be valid UTF-8 and equal the prompt followed by the decoding of the ids the
run exports (generation.json), decoded independently: by spm_decode for SentencePiece, and here,
by the format's rules, for tokenizer.json. The model's weights are random, so the text is too.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_cli_errors import SIZES, assert_one_line, binary, run

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "examples" / "data"
PROMPT = "Hello wörld 🙂 モデル"


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (scripts/setup.sh installs the sentencepiece package)")
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A 1-layer float32 checkpoint with a 400-token vocabulary."""
    d = tmp_path_factory.mktemp("ckpt")
    sizes = [a if a != "100" else "400" for a in SIZES]  # --vocab 400
    result = run("llama_generate", *sizes, "--dtype", "f32", "--export", str(d))
    assert result.returncode == 0, result.stderr
    (d / "generation.json").unlink()
    return d


def generate(weights, tmp_path):
    """Runs --prompt PROMPT; returns stdout (strictly decoded: it must be UTF-8), the prompt's
    ids and the generated ids."""
    out = tmp_path / "out"
    result = subprocess.run(
        [str(binary("examples/llama_generate")), "--weights", str(weights), "--prompt", PROMPT,
         "--dtype", "f32", "--new-tokens", "24", "--top-k", "400", "--top-p", "1", "--export",
         str(out)], capture_output=True, env=dict(os.environ, TILEOPS_NUM_THREADS="1"),
        timeout=120)
    stderr = result.stderr.decode(errors="replace")
    assert result.returncode == 0, stderr
    assert "prefill:" in stderr and "loaded" in stderr, stderr
    record = json.loads((out / "generation.json").read_text())
    return result.stdout.decode("utf-8"), record["prompts"][0], record["tokens"][0]


def test_sentencepiece_prompt_round_trip(checkpoint, tmp_path):
    spm_train, spm_decode = tool("spm_train"), tool("spm_decode")
    subprocess.run([spm_train, f"--input={DATA / 'tokenizer_corpus.txt'}",
                    f"--model_prefix={tmp_path / 'tokenizer'}", "--vocab_size=400",
                    "--model_type=bpe", "--byte_fallback=true", "--character_coverage=1.0",
                    "--normalization_rule_name=identity", "--remove_extra_whitespaces=false",
                    "--minloglevel=2"], check=True, capture_output=True)
    weights = tmp_path / "ckpt"
    shutil.copytree(checkpoint, weights)
    shutil.copy(tmp_path / "tokenizer.model", weights / "tokenizer.model")
    stdout, prompt_ids, tokens = generate(weights, tmp_path)

    def decode(ids):
        text = subprocess.run([spm_decode, f"--model={weights / 'tokenizer.model'}",
                               "--input_format=id"], input=" ".join(map(str, ids)) + "\n",
                              capture_output=True, text=True, check=True).stdout
        return text[:-1]

    assert prompt_ids[0] == 1  # BOS, as Llama's tokenizer adds it
    assert decode(prompt_ids) == PROMPT
    assert len(tokens) >= 1
    assert stdout == decode(prompt_ids + tokens) + "\n"


def bpe_decode(tokenizer, ids):
    """Byte-level BPE decoding as the format defines it: GPT-2's byte-to-character map undone,
    special added tokens dropped, invalid UTF-8 replaced."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) +
                 list(range(0xAE, 0x100)))
    byte_of = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            byte_of[chr(256 + extra)] = b
            extra += 1
    token_of = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    special = set()
    for a in tokenizer["added_tokens"]:
        token_of[a["id"]] = a["content"]
        if a["special"]:
            special.add(a["id"])
    out = b""
    for i in ids:
        if i in special or i not in token_of:
            continue
        t = token_of[i]
        out += bytes(byte_of[c] for c in t) if all(c in byte_of for c in t) else t.encode()
    return out.decode("utf-8", errors="replace")


def test_tokenizer_json_prompt_round_trip(checkpoint, tmp_path):
    weights = tmp_path / "ckpt"
    shutil.copytree(checkpoint, weights)
    shutil.copy(DATA / "tiny_tokenizer.json", weights / "tokenizer.json")
    stdout, prompt_ids, tokens = generate(weights, tmp_path)
    tokenizer = json.loads((DATA / "tiny_tokenizer.json").read_text(encoding="utf-8"))
    assert prompt_ids[0] == 300  # <|begin_of_text|>, from the post_processor's template
    assert bpe_decode(tokenizer, prompt_ids) == PROMPT
    assert len(tokens) >= 1
    assert stdout == PROMPT + bpe_decode(tokenizer, tokens) + "\n"


def test_prompt_errors_are_one_line(checkpoint, tmp_path):
    assert_one_line(run("llama_generate", *SIZES, "--prompt", "hi"), 1, "--prompt", "--weights")
    assert_one_line(run("llama_generate", "--weights", str(checkpoint), "--prompt", "hi"), 1,
                    "tokenizer.model or tokenizer.json")
    weights = tmp_path / "ckpt"
    shutil.copytree(checkpoint, weights)
    (weights / "tokenizer.json").write_text('{"model": {"type": "BPE", "byte_fallback": true}}')
    assert_one_line(run("llama_generate", "--weights", str(weights), "--prompt", "hi"), 1,
                    "tokenizer.json", "byte_fallback")
