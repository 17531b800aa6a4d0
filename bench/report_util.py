"""What the bench/*.py reports share: the CPU's name and a timer for torch peers."""
import platform
import time


def cpu_name():
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def time_it(fn, min_time=0.3, warm_up=True):
    """Mean seconds per call of fn over at least min_time seconds (after one untimed call)."""
    if warm_up:
        fn()
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fn()
        reps += 1
    return (time.perf_counter() - start) / reps
