"""Operators called from several Python threads at once (the GIL is released while they run)."""

import threading

import torch

from tileops import ops


def test_four_threads():
    inputs = [torch.rand(64, 1024, generator=torch.Generator().manual_seed(i)) for i in range(4)]
    weight = torch.rand(1024)
    results = [None] * 4
    barrier = threading.Barrier(4)

    def work(i):
        barrier.wait()
        for _ in range(20):
            results[i] = ops.rms_norm(inputs[i], weight, 1e-6)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, got in zip(inputs, results):
        ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
        assert torch.allclose(got, ref, atol=1e-5, rtol=1e-5)


def test_cli_env():
    import subprocess
    import sys
    import os
    env = dict(os.environ)
    result = subprocess.run([sys.executable, "-m", "tileops", "env"], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "rms_norm" in result.stdout
    assert "AMX-BF16" in result.stdout
