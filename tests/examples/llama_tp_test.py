#!/usr/bin/env python3
"""llama_generate --tp 2 under mpirun (two ranks on this machine, shared memory).

  logits:   the logits of every step (prefill, then decode) of 2 ranks (and once 4, with KV
            heads shared by 2 ranks each) equal 1 rank's within
            the dtype's tolerance: float32 and bfloat16, packed and [N, K] weights, synthetic
            weights, a checkpoint loaded shard by shard and int4 quantized at load (uneven
            vocabulary slices: 101 rows).
  failures: a --tp that is not the world size, a rank that fails to load, one that hangs
            while loading, one that dies mid-run and one that hangs mid-run make every rank
            exit non-zero, with the message, within seconds (the runs are killed past a
            deadline: a hang fails).

Usage: llama_tp_test.py logits|failures LLAMA_GENERATE MPIEXEC WORK_DIR
MPIEXEC is MPI-NOTFOUND when CMake found no MPI: the test then fails saying so.
"""
import array
import os
import shutil
import signal
import subprocess
import sys
import time

MODEL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--head-size",
         "16", "--intermediate", "128", "--vocab", "101", "--prompts", "2", "--prompt-tokens", "5",
         "--new-tokens", "5", "--top-k", "1"]
BATCH, VOCAB, STEPS = 2, 101, 5
# Largest |2 ranks - 1 rank| over the largest |logit| of 1 rank. float32: the row-parallel sums
# only change order. bfloat16: each rank's partial sum is rounded to bfloat16 before the
# float32 all-reduce, and the activations round at 2^-8.
TOLERANCE = {"f32": 1e-5, "bf16": 4e-2}


def run(command, deadline, env):
    """(exit status, output, seconds); a run past `deadline` seconds is killed and fails."""
    start = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                          start_new_session=True) as process:
        try:
            out, _ = process.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, _ = process.communicate()
            sys.exit(f"FAIL: {' '.join(command)} still ran after {deadline} s (a rank hangs):\n"
                     + out.decode(errors="replace"))
    return process.returncode, out.decode(errors="replace"), time.monotonic() - start


def read_logits(path):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if len(values) != STEPS * BATCH * VOCAB:
        sys.exit(f"FAIL: {path} holds {len(values)} logits, expected {STEPS}x{BATCH}x{VOCAB}")
    return values


def compare(one, two, tolerance, what):
    """Per sequence, the steps until the first whose argmax differs (a near tie: the sequences
    then see different tokens, and later steps are not comparable)."""
    scale = max(abs(v) for v in one)
    worst, compared = 0.0, 0
    for b in range(BATCH):
        for s in range(STEPS):
            row = (s * BATCH + b) * VOCAB
            a, c = one[row:row + VOCAB], two[row:row + VOCAB]
            worst = max(worst, max(abs(x - y) for x, y in zip(a, c)))
            compared += 1
            if max(range(VOCAB), key=a.__getitem__) != max(range(VOCAB), key=c.__getitem__):
                break
    ok = worst <= tolerance * scale
    print(f"{'ok' if ok else 'FAIL'}: {what}: {compared} rows, max |diff| {worst:.3g} "
          f"(tolerance {tolerance} x max |logit| {scale:.3g})")
    return ok


def logits(generate, mpi, work, env):
    ok = True
    checkpoint = os.path.join(work, "checkpoint")
    status, out, _ = run([generate, *MODEL, "--dtype", "f32", "--export", checkpoint], 60, env)
    if status != 0:
        sys.exit("FAIL: exporting the checkpoint:\n" + out)
    # Each dtype with each weight form; bfloat16 packed from the checkpoint, each rank reading
    # its rows and columns of the mapped file (converted from float32).
    # int4 quantized at load after sharding: K slices of 32 and 64 keep the groups of 32 whole,
    # so both runs hold the same codes and scales.
    # 4 ranks: one query head each, the 2 KV heads each kept by 2 ranks, vocabulary 26/25/25/25.
    cases = [("f32", True, [], 2), ("f32", False, [], 2), ("bf16", False, [], 2),
             ("bf16", True, ["--weights", checkpoint], 2),
             ("bf16", True, ["--quantize", "int4"], 2), ("f32", True, [], 4)]
    for dtype, pack, source, ranks in cases:
        launch = [*mpi]
        launch[launch.index("-np") + 1] = str(ranks)
        args = [*MODEL, "--dtype", dtype, *source] + ([] if pack else ["--no-pack"])
        what = f"{ranks} ranks, {dtype}, {'packed' if pack else '[N, K]'}, " + \
            {"": "synthetic weights", "--weights": "checkpoint shards",
             "--quantize": "int4 at load"}[source[0] if source else ""]
        one, two = os.path.join(work, "one.bin"), os.path.join(work, "two.bin")
        status, out, _ = run([generate, *args, "--dump-logits", one], 60, env)
        if status != 0:
            sys.exit(f"FAIL: {what}: 1 rank exited {status}:\n{out}")
        status, out, _ = run([*launch, generate, *args, "--tp", str(ranks), "--dump-logits",
                              two], 60, env)
        if status != 0:
            sys.exit(f"FAIL: {what}: 2 ranks exited {status}:\n{out}")
        if f"tensor parallel over {ranks} ranks" not in out or out.count("decoder:") != 1:
            sys.exit(f"FAIL: {what}: expected one report (rank 0) of a {ranks}-rank run:\n{out}")
        ok &= compare(read_logits(one), read_logits(two), TOLERANCE[dtype], what)
    return ok


def failures(generate, mpi, work, env):
    del work
    base = [generate, *MODEL, "--dtype", "f32"]
    cases = [
        ("--tp 3 on 2 ranks", [*mpi, *base, "--tp", "3"],
         "--tp 3 must equal the MPI world size (2 ranks"),
        ("rank 1 fails to load", [*mpi, *base, "--tp", "2", "--tp-test-fail-load", "1"],
         "rank 1 failed to load: test hook --tp-test-fail-load"),
        ("rank 1 hangs while loading", [*mpi, *base, "--tp", "2", "--tp-test-hang-load", "1",
                                        "--tp-load-timeout", "2"],
         "rank 0: the agreement after every rank's attempt to load timed out after 2 s"),
        ("rank 1 dies at step 2", [*mpi, *base, "--tp", "2", "--tp-test-exit-rank", "1",
                                   "--tp-timeout", "5"], "exiting at step 2"),
        ("rank 1 hangs at step 2", [*mpi, *base, "--tp", "2", "--tp-test-hang-rank", "1",
                                    "--tp-timeout", "2"],
         "rank 0: all_reduce timed out after 2 s (a rank died or hangs)"),
    ]
    ok = True
    for what, command, message in cases:
        status, out, seconds = run(command, 45, env)
        good = status != 0 and message in out
        print(f"{'ok' if good else 'FAIL'}: {what}: exit {status} in {seconds:.1f} s")
        if not good:
            print(f"  expected a non-zero exit and '{message}' in:\n{out}")
        ok &= good
    return ok


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("logits", "failures"):
        sys.exit(__doc__)
    mode, generate, mpiexec, work = sys.argv[1:]
    if not mpiexec or mpiexec.endswith("NOTFOUND"):
        sys.exit("FAIL: MPI was not found when this build was configured (install "
                 "libopenmpi-dev and openmpi-bin, e.g. with scripts/setup.sh, and reconfigure)")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, TILEOPS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # Two ranks on this machine whatever its cores, over shared memory (no network needed);
    # no single-copy mechanism, which containers often forbid (ptrace).
    mpi = [mpiexec, "-np", "2", "--oversubscribe", "--bind-to", "none", "--mca", "btl",
           "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]
    ok = (logits if mode == "logits" else failures)(generate, mpi, work, env)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
