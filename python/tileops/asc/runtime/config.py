"""asc.runtime.config: asc's backend and platform selection, mapped onto tileops' backends.

asc runs a kernel on an Ascend NPU (``Backend.NPU``) or on the CANN simulator
(``Backend.Model``). tileops has no Ascend device: the simulator maps to the ``interp`` backend
(the reference interpreter, like the simulator the slow and exact one) and the device to the
``cpu`` backend (compiled C++). The platform names the Ascend chip; it is recorded and
validated but does not change what runs here.

    import tileops.asc.runtime.config as config
    config.set_platform(config.Backend.Model, config.Platform.Ascend950PR_9599)

The setting is process-wide, as asc's, and read at every launch of an asc2 kernel that was not
given ``backend=`` in its decorator; before any set_platform, kernels use tileops' default
(``auto``: cpu when a C++ compiler is found, else interp).
"""

import enum
import threading


class Backend(enum.Enum):
    """Where asc runs kernels; ``tileops_backend`` is the tileops backend that stands in."""

    Model = "Model"  # the CANN simulator
    NPU = "NPU"      # an Ascend device

    @property
    def tileops_backend(self):
        return _BACKENDS[self]


_BACKENDS = {Backend.Model: "interp", Backend.NPU: "cpu"}


class Platform(enum.Enum):
    """Ascend chips asc targets. No effect on what runs here (there is one CPU target)."""

    Ascend910B1 = "Ascend910B1"
    Ascend910B2 = "Ascend910B2"
    Ascend910B3 = "Ascend910B3"
    Ascend910B4 = "Ascend910B4"
    Ascend310P1 = "Ascend310P1"
    Ascend310P3 = "Ascend310P3"
    Ascend950PR_9599 = "Ascend950PR_9599"


_lock = threading.Lock()
_current = {"backend": None, "platform": None}


def _member(enum_type, value, what):
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value in enum_type.__members__:
        return enum_type[value]
    raise ValueError(f"asc.runtime.config.set_platform: {what} must be one of "
                     f"{', '.join(enum_type.__members__)} (a {enum_type.__name__} or its name), "
                     f"got {value!r}")


def set_platform(backend, platform=None):
    """Selects where asc2 kernels run from now on: ``backend`` a Backend (or its name, as asc's
    ``-r Model`` command-line flag), ``platform`` a Platform (or its name, ``-v ...``) or None."""
    backend = _member(Backend, backend, "backend")
    platform = None if platform is None else _member(Platform, platform, "platform")
    with _lock:
        _current["backend"], _current["platform"] = backend, platform


def get_backend():
    """The Backend set by set_platform, or None (tileops' default applies)."""
    with _lock:
        return _current["backend"]


def get_platform():
    """The Platform set by set_platform, or None."""
    with _lock:
        return _current["platform"]


def reset():
    """Forgets set_platform: kernels use tileops' default backend again."""
    with _lock:
        _current["backend"] = _current["platform"] = None


def tileops_backend():
    """The tileops backend asc2 kernels launch on now ('interp', 'cpu'), or None for the
    kernel's own default."""
    backend = get_backend()
    return None if backend is None else backend.tileops_backend


__all__ = ["Backend", "Platform", "set_platform", "get_backend", "get_platform", "reset",
           "tileops_backend"]
