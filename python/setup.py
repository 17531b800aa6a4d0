"""The tileops wheel: the Python package and the extension modules a CMake build wrote.

Nothing is compiled here (the extension links the static library the CMake build made): build it
first (scripts/setup.sh release writes python/tileops/_C*.so; another build: point
TILEOPS_EXTENSION_DIR at its extension folder). The version is project()'s in CMakeLists.txt.
setuptools' scratch folders go to a temporary directory, not into the source tree.
"""

import atexit
import glob
import os
import re
import shutil
import sysconfig
import tempfile

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SCRATCH = tempfile.mkdtemp(prefix="tileops-wheel-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def version():
    with open(os.path.join(HERE, "..", "CMakeLists.txt"), encoding="utf-8") as f:
        found = re.search(r"project\(\s*tileops\s+VERSION\s+([0-9.]+)", f.read())
    if not found:
        raise SystemExit("setup.py: no `project(tileops VERSION x.y.z` in CMakeLists.txt")
    return found.group(1)


def extensions():
    """The built extension modules of this interpreter (its EXT_SUFFIX)."""
    folder = os.environ.get("TILEOPS_EXTENSION_DIR") or os.path.join(HERE, "tileops")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = [path for name in ("_C", "_torch_view")
             for path in glob.glob(os.path.join(folder, name + suffix))]
    if not any(os.path.basename(p).startswith("_C") for p in found):
        raise SystemExit(f"setup.py: no tileops/_C{suffix} in {folder}: build it first "
                         "(scripts/setup.sh release), or set TILEOPS_EXTENSION_DIR to the "
                         "extension folder of another build")
    return found


class BuildPy(build_py):
    """Copies the built extension modules next to the package's Python files."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "tileops")
        for path in extensions():
            shutil.copy2(path, target)


class BinaryDistribution(Distribution):
    """A wheel tagged for this interpreter and platform: it holds compiled modules."""

    def has_ext_modules(self):
        return True


setup(
    name="tileops",
    version=version(),
    description="LLM inference operators and a tile language for CPUs (C++ with Python bindings)",
    python_requires=">=3.9",
    install_requires=["numpy"],
    packages=find_packages(HERE, include=["tileops", "tileops.*"]),
    package_dir={"": os.path.relpath(HERE)},
    exclude_package_data={"tileops": ["*.so"]},
    cmdclass={"build_py": BuildPy},
    distclass=BinaryDistribution,
    options={"build": {"build_base": os.path.join(SCRATCH, "build")},
             "egg_info": {"egg_base": SCRATCH}},
)
