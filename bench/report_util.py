"""What the bench/*.py reports share: the CPU's name and SIMD features, and a timer for torch
peers."""
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


def cpu_simd():
    """The SIMD features that decide which kernels run, from /proc/cpuinfo's flags."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        extra = [name for flag, name in (("avx512_bf16", "BF16"), ("avx512_fp16", "FP16"),
                                         ("amx_bf16", "AMX-BF16")) if flag in flags]
        return "AVX-512" + (f" ({', '.join(extra)})" if extra else "") + " + AVX2 + FMA"
    if "avx2" in flags:
        return "AVX2 + FMA, no AVX-512"
    return "no AVX2"


def time_it(fn, min_time=0.3, warm_up=True):
    """Mean seconds per call of fn over at least min_time seconds (after one untimed call)."""
    if warm_up:
        fn()
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fn()
        reps += 1
    return (time.perf_counter() - start) / reps
