"""Warm Python launch of a cached 8-lane tl kernel (cpu backend): microseconds per call, the
best of 5 runs of 20000 calls (argument binding, specialisation lookup, the launch itself).

Usage: PYTHONPATH=python /usr/bin/python3 bench/tl_python_launch.py
"""
import timeit

import numpy as np

from tileops import tl


@tl.jit(backend="cpu")
def tiny(x: tl.GlobalAddress, y: tl.GlobalAddress, n: int, t: tl.ConstExpr[int]):
    tx, ty = tl.tensor(x, [n]), tl.tensor(y, [n])
    tl.store(tl.load(tx, [t], offsets=[0]) + 1.0, ty, offsets=[0])


def main():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    launch = tiny[1]
    launch(x, y, 8, 8)  # traced and compiled once
    best = min(timeit.repeat(lambda: launch(x, y, 8, 8), number=20000, repeat=5))
    print(f"{best / 20000 * 1e6:.2f} us per warm launch")


if __name__ == "__main__":
    main()
