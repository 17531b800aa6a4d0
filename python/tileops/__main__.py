"""``python -m tileops <command>``: the ``tileops`` command (see tileops.cli)."""

import sys

from tileops.cli import main

if __name__ == "__main__":
    sys.exit(main())
