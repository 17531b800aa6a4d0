"""The layering rules of the folder READMEs, checked on every #include (CTest runtime/layering).

Lower layers never include higher ones: core < runtime < (tl, ops) < (c_api, python, tools).
Each rule names the files it covers (a path prefix under the root) and the includes they may not
make (regular expressions over the quoted include path). Exits 1 listing every violation.

Usage: check_layers.py ROOT [--expect N]   (--expect: succeed iff exactly N violations, the
planted ones of a test fixture)
"""

import pathlib
import re
import sys

# (files under, forbidden includes, why): the READMEs' words, in the order of the layers.
RULES = [
    ("src/core/", r"^(tileops/(?!core/)|src/(?!core/)|python/|tools/)",
     "src/core/README.md: includes only the standard library and tileops/core"),
    ("include/tileops/core/", r"^(tileops/(?!core/)|src/)",
     "src/core/README.md: includes only the standard library and tileops/core"),
    ("src/runtime/", r"^(tileops/(ops|tl|c)[/.]|src/(ops|tl|c_api)/|python/|tools/)",
     "src/runtime/README.md: may include core; never ops or tl"),
    ("include/tileops/runtime/", r"^(tileops/(ops|tl|c)[/.]|src/)",
     "src/runtime/README.md: may include core; never ops or tl"),
    ("src/tl/", r"^(tileops/(ops|c)[/.]|src/(ops|c_api)/|python/|tools/)",
     "src/tl/README.md: operators may use tl, not the reverse"),
    ("include/tileops/tl", r"^(tileops/(ops|c)[/.]|src/)",
     "src/tl/README.md: operators may use tl, not the reverse"),
    ("src/tl/ir/", r"^(tileops/(?!core/|tl/ir\.h)|src/(?!core/|tl/ir/))",
     "src/tl/ir/README.md: includes only core and the IR header"),
    ("src/ops/", r"^(src/(c_api)/|python/|tools/)",
     "src/ops/README.md: operators are below the C API, Python and tools"),
    ("src/ops/cpu/simd/",
     r"^(tileops/(ops|tl)[/.]|src/(ops/(?!cpu/simd/|cpu/streaming\.h$)|tl/))",
     "src/ops/cpu/simd/README.md: includes only Highway, core, runtime and ops/cpu/streaming.h"),
    ("src/ops/cpu/streaming.h", r"^(tileops/(?!core/)|src/)",
     "src/ops/cpu/simd/README.md: streaming.h includes only core"),
    ("src/ops/cpu/tl/", r"^src/tl/",
     "src/ops/cpu/tl/README.md: never the src/tl internals, only the public tileops/tl headers"),
    ("src/c_api/", r"^(src/(?!c_api/)|python/|tools/)",
     "src/c_api/README.md: the public headers and its own files only"),
    ("include/tileops/", r"^(src/|python/|tools/)",
     "public headers never include the implementation"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def violations(root):
    found = []
    paths = [p for top in ("src", "include") for p in (root / top).rglob("*")]
    for path in sorted(paths):
        if path.suffix not in (".h", ".cc", ".c") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        rules = [(re.compile(bad), why) for under, bad, why in RULES if rel.startswith(under)]
        if not rules:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            for bad, why in rules:
                if bad.search(m.group(1)):
                    found.append(f"{rel}:{number}: includes \"{m.group(1)}\" ({why})")
    return found


def main():
    args = sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--expect"):
        print("usage: check_layers.py ROOT [--expect N]", file=sys.stderr)
        return 2
    found = violations(pathlib.Path(args[0]))
    for v in found:
        print(v)
    if len(args) == 3:
        return 0 if len(found) == int(args[2]) else 1
    if not found:
        print("layering: every #include keeps to the rules of the folder READMEs")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
