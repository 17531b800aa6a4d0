"""The asc2 examples (examples/asc2/: the seed's golden kernels with only their imports changed)
run on both of asc's backends as tileops maps them: Model -> interp, NPU -> cpu."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import tileops.asc.runtime.config as config

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "asc2"
# (script, extra arguments, marks)
CASES = [
    ("abs_f16.py", [], []),
    ("add_f32.py", [], []),
    ("gelu.py", [], []),
    ("leaky_relu.py", [], []),
    ("reduce_sum.py", [], []),
    ("softmax.py", [], []),
    ("matmul_f16.py", [], []),
    ("rms_norm.py", ["--case", "full_row"], []),
    ("rms_norm.py", ["--case", "split_d"], []),
]


def load(script):
    path = EXAMPLES / script
    spec = importlib.util.spec_from_file_location(f"asc2_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def restore_platform():
    yield
    config.reset()


def test_every_example_is_listed():
    assert sorted({c[0] for c in CASES}) == sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("backend", ["Model", "NPU"])
@pytest.mark.parametrize("script,extra", [
    pytest.param(s, e, marks=m, id=s[:-3] + "".join("-" + a for a in e[1:])) for s, e, m in CASES])
def test_example(script, extra, backend, capsys):
    load(script).main(["-r", backend, "-v", "Ascend950PR_9599"] + extra)
    assert "PASS" in capsys.readouterr().out
    assert config.tileops_backend() == {"Model": "interp", "NPU": "cpu"}[backend]


def test_examples_import_only_tileops_asc_and_asc2():
    # "Only the imports changed": no tileops name other than asc, asc2 and asc's runtime config.
    for path in EXAMPLES.glob("*.py"):
        for line in path.read_text().splitlines():
            if "tileops" in line and line.startswith(("import", "from")):
                assert line in ("from tileops import asc", "from tileops import asc2",
                                "import tileops.asc.runtime.config as config"), (path.name, line)


def test_an_example_runs_as_a_script():
    path = [str(EXAMPLES.parents[1] / "python")] + [os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    done = subprocess.run([sys.executable, str(EXAMPLES / "abs_f16.py"), "-r", "Model"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "abs_f16: PASS" in done.stdout, done.stderr
