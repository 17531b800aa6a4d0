"""``tileops catalog list | search QUERY | show NAME | verify NAME | bench NAME | index``: the
kernel catalog from the command line (tileops.catalog reads it; catalog/README.md describes it).

  list                 one line per kernel
  search QUERY         kernels ranked by how well their entry fields match QUERY
  show NAME            the whole entry
  verify NAME          `tileops verify` of the kernel: static check, its test on interp and cpu
  bench NAME [--repeat N]
                       times the kernel (cpu backend) at the entry's bench shape against torch
                       doing the same math
  index [--check]      writes catalog/index.json and INDEX.md from the entries; --check only
                       compares (status 1 when they are stale)
Options: --root DIR (default $TILEOPS_CATALOG_DIR, else the repository's catalog/), --json."""

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from tileops import catalog


def _parser():
    p = argparse.ArgumentParser(prog="tileops catalog", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", help="the catalog folder")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    sub.add_parser("search").add_argument("query", nargs="+")
    sub.add_parser("show").add_argument("name")
    sub.add_parser("verify").add_argument("name")
    bench = sub.add_parser("bench")
    bench.add_argument("name")
    bench.add_argument("--repeat", type=int, default=5)
    bench.add_argument("--shape", help="comma-separated sizes replacing the entry's bench shape "
                       "(as many as it has, e.g. 2048,2048,2048)")
    sub.add_parser("index").add_argument("--check", action="store_true")
    return p


def _line(e):
    return f"{e['family'] + '/' + e['name']:40} {e['stages']:32} {e['summary']}"


def _list(args):
    entries = catalog.load_entries(args.root)
    if args.json:
        print(json.dumps([e["name"] for e in entries]))
    for e in [] if args.json else entries:
        print(_line(e))
    return 0


def _search(args):
    query = " ".join(args.query)
    ranked = catalog.search(query, args.root)
    if args.json:
        print(json.dumps([{"name": e["name"], "score": sc} for sc, e in ranked]))
        return 0
    if not ranked:
        print(f"tileops catalog search: nothing matches '{query}'", file=sys.stderr)
        return 1
    for sc, e in ranked:
        print(f"{sc:6.2f}  {_line(e)}")
    return 0


def _show(args):
    e = catalog.find(args.name, args.root)
    if args.json:
        print(json.dumps(e, indent=2))
        return 0
    v = e["validated"]
    lines = [f"{e['family']}/{e['name']}: {e['summary']}", f"launch: {e['launch']}",
             f"stages: {e['stages']}", "formula:"] + [f"  {f}" for f in e["formula"]]
    lines += ["study_for:"] + [f"  - {x}" for x in e["study_for"]]
    lines += ["do_not_copy_when:"] + [f"  - {x}" for x in e["do_not_copy_when"]]
    lines += ["validated:", f"  backends: {', '.join(v['backends'])}",
              f"  dtypes: {', '.join(v['dtypes'])}",
              f"  tolerances: {', '.join(f'{k} {t:g}' for k, t in v['tolerances'].items())}"]
    for kind, shapes in v["shapes"].items():
        lines.append(f"  shapes ({kind}, {v['shapes_axes']}): "
                     + " ".join("(" + ",".join(map(str, sh)) + ")" for sh in shapes))
    print("\n".join(lines))
    return 0


def _folder(args, e):
    return Path(args.root or catalog.default_root()) / e["family"] / e["name"]


def _verify(args):
    from tileops.cli import verify

    e = catalog.find(args.name, args.root)
    kernel = _folder(args, e) / "kernel.py"
    return verify.main([str(kernel)])


def _import_kernel(args, e):
    root = Path(args.root or catalog.default_root()).resolve()
    if str(root.parent) not in sys.path:
        sys.path.insert(0, str(root.parent))
    return importlib.import_module(f"{root.name}.{e['family']}.{e['name']}.kernel")


def _timed(fn, repeat):
    fn()  # compiles (cpu backend) and warms the caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _bench(args):
    from tileops.asc.runtime import config

    if args.repeat < 1:
        print("tileops catalog bench: --repeat must be at least 1", file=sys.stderr)
        return 2
    e = catalog.find(args.name, args.root)
    if "bench" not in e:
        print(f"tileops catalog bench: {e['name']} has no bench shape", file=sys.stderr)
        return 1
    shape = list(e["bench"]["shape"])
    if args.shape is not None:
        given = args.shape.split(",")
        if len(given) != len(shape) or not all(v.strip().isdigit() and int(v) > 0 for v in given):
            print(f"tileops catalog bench: --shape {args.shape!r}: expected {len(shape)} "
                  f"comma-separated positive sizes, as the entry's bench shape "
                  f"{','.join(map(str, shape))}", file=sys.stderr)
            return 2
        shape = [int(v) for v in given]
    module = _import_kernel(args, e)
    case = module.bench_case(tuple(shape), e["bench"]["dtype"])
    config.set_platform("NPU")  # the cpu backend
    try:
        ours = _timed(case["run"], args.repeat)
    finally:
        config.reset()
    theirs = _timed(case["torch"], args.repeat)
    row = {"kernel": e["name"], "shape": shape, "dtype": e["bench"]["dtype"],
           "ms": round(ours * 1e3, 3), "gflops": round(case["flops"] / ours / 1e9, 2),
           "torch_ms": round(theirs * 1e3, 3), "speedup_vs_torch": round(theirs / ours, 3)}
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{row['kernel']} {tuple(row['shape'])} {row['dtype']}: {row['ms']} ms "
              f"({row['gflops']} GFLOP/s); torch (same math, float32): {row['torch_ms']} ms; "
              f"speed-up {row['speedup_vs_torch']}x")
    return 0


def _index(args):
    root = Path(args.root or catalog.default_root())
    if args.check:
        stale = catalog.stale_files(root)
        if stale:
            print(f"tileops catalog index: {', '.join(stale)} in {root} are stale: run "
                  "python -m tileops catalog index", file=sys.stderr)
            return 1
        print(f"tileops catalog index: {root}/index.json and INDEX.md are up to date")
        return 0
    catalog.write_index(root)
    print(f"tileops catalog index: wrote {root}/index.json and INDEX.md")
    return 0


COMMANDS = {"list": _list, "search": _search, "show": _show, "verify": _verify,
            "bench": _bench, "index": _index}


def main(argv):
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except catalog.CatalogError as e:
        print(f"tileops {e}" if str(e).startswith("catalog") else f"tileops catalog: {e}",
              file=sys.stderr)
        return 1
    except BrokenPipeError:  # `tileops catalog list | head`: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so that the exit flush is quiet
        return 0
