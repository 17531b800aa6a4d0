"""``python -m tileops demo|env``: the ``tileops`` command, run inside the extension."""

import sys

from tileops import _C


def main(argv=None):
    """Runs a CLI command and returns its exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    return _C.run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
