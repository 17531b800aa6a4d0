"""asc.runtime: where asc2 kernels run (``asc.runtime.config``)."""

from tileops.asc.runtime import config

__all__ = ["config"]
