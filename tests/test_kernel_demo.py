"""The kernel half of `make demo` runs and its three answers agree."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_kernel_demo():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "kernel_demo.py")], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "for i0 in affine_range(0, 2)" in out
    errs = [float(m) for m in re.findall(r"max \|[^=]*= ([0-9.e+-]+)", out)]
    assert len(errs) == 2 and max(errs) < 1e-4, out
    assert "identical to jax.jit: True" in out, out
