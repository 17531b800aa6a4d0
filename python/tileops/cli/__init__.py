"""The ``tileops`` command line from Python: ``new``, ``check``, ``verify`` and ``catalog`` run
here (they read and run Python); every other command (``env``, ``demo``, ``help``) is the C++
CLI inside the extension. The C++ ``tileops`` executable runs ``python -m tileops`` for the
Python ones."""

import importlib
import sys

PYTHON_COMMANDS = {"new": "tileops.cli.new", "check": "tileops.cli.check",
                   "verify": "tileops.cli.verify", "catalog": "tileops.cli.catalog"}


def main(argv=None):
    """Runs a CLI command and returns its exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in PYTHON_COMMANDS:
        return importlib.import_module(PYTHON_COMMANDS[args[0]]).main(args[1:])
    import os

    # `tileops env` reports this interpreter's numpy and torch.
    os.environ.setdefault("TILEOPS_PYTHON", sys.executable)
    from tileops import _C

    sys.stdout.flush()
    return _C.run_cli(args)
