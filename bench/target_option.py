"""The reports' `--target T` option: forces TILEOPS_SIMD_TARGET for every tileops process the
report starts (and for tileops imported afterwards), so that one machine measures the code
other CPUs run. The library rejects a target this CPU lacks on the first call."""
import os

TARGETS = ("native", "avx512", "avx2", "sse4", "scalar")


def take_target(argv):
    """Removes `--target T` or `--target=T` from argv (in place), sets TILEOPS_SIMD_TARGET, and
    returns the target ("native" when neither the option nor the variable is set)."""
    target = None
    for i, arg in enumerate(argv):
        if arg == "--target" and i + 1 < len(argv):
            target = argv[i + 1]
            del argv[i:i + 2]
            break
        if arg.startswith("--target="):
            target = arg.split("=", 1)[1]
            del argv[i]
            break
    if target is None:
        return os.environ.get("TILEOPS_SIMD_TARGET") or "native"
    if target not in TARGETS:
        raise SystemExit(f"--target: expected one of {', '.join(TARGETS)}, got {target!r}")
    os.environ["TILEOPS_SIMD_TARGET"] = target
    return target


def result_name(stem, target):
    """bench/results/<stem>.md natively, <stem>-<target>.md for a forced target."""
    return f"{stem}.md" if target == "native" else f"{stem}-{target}.md"
