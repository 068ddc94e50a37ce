"""goldtrace demo: compute the goldens of the bundled transformer block
(examples/transformer_block.hlo, inputs in examples/inputs/), print a summary,
run the same job through the `infergoldens` CLI, and, when jax is installed,
show XLA:CPU's outputs for the same module beside ours."""

import glob
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import goldtrace

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, "transformer_block.hlo")


def summary(a):
    f = a.astype(np.float64)
    return f"{a.dtype}{list(a.shape)}  min {f.min():+.4f}  max {f.max():+.4f}  mean {f.mean():+.5f}"


def main():
    inputs = [goldtrace.load_npy(p) for p in sorted(glob.glob(os.path.join(HERE, "inputs", "input*.npy")))]
    module = goldtrace.hlo.load(MODULE)
    print(f"module   {module.name} from {os.path.relpath(MODULE)}")
    for p, a in zip(module.parameters, inputs):
        print(f"  input  {p.name:12s} {summary(a)}")

    t0 = time.perf_counter()
    outputs = goldtrace.golden(module, *inputs)
    elapsed = time.perf_counter() - t0
    for i, a in enumerate(outputs):
        print(f"  golden value_output{i}  {summary(a)}")
    print(f"computed in {elapsed * 1e3:.1f} ms by the Go evaluator\n")

    with tempfile.TemporaryDirectory() as out:
        cmd = ["infergoldens", "-m", MODULE, "-O", out] + sum((["-i", p] for p in sorted(glob.glob(os.path.join(HERE, "inputs", "*.npy")))), [])
        print("$ infergoldens -m examples/transformer_block.hlo -i examples/inputs/input0.npy ... -O <dir>")
        subprocess.run([sys.executable, "-m", "goldtrace.cli"] + cmd[1:], check=True)
        written = sorted(os.listdir(out))
        print(f"  wrote {', '.join(written)}")
        same = all(np.array_equal(goldtrace.load_npy(os.path.join(out, f"value_output{i}.npy")), a) for i, a in enumerate(outputs))
        print(f"  identical to goldtrace.golden(): {same}\n")

    try:
        import jax  # noqa: F401
    except ImportError:
        print("(install jax to compare with XLA:CPU)")
        return
    sys.path.insert(0, HERE)
    import model

    lowered = model.lowered(dict(zip(model.init_inputs().keys(), inputs)))
    assert lowered.as_text(dialect="hlo") == open(MODULE).read(), "examples/model.py no longer produces the bundled module"
    reference = np.asarray(lowered.compile()(*inputs))
    ours = outputs[0]
    diff = np.abs(reference.astype(np.float64) - ours)
    print("XLA:CPU (jax.jit of the same module) beside goldtrace:")
    for idx in [(0, 0, 0), (0, 5, 17), (1, 15, 63)]:
        print(f"  out{list(idx)}  xla {reference[idx]:+.7f}   goldtrace {ours[idx]:+.7f}")
    scale = np.abs(reference).max()
    print(f"  max |diff| {diff.max():.2e} (relative to the output's scale {diff.max() / scale:.1e}), "
          f"bit-identical elements {np.mean(reference == ours) * 100:.1f}%")
    print("  (what differs is mostly the f32 summation order of matrix-matrix dots, which XLA:CPU")
    print("   hands to YNNPACK; docs/xla-cpu-semantics.md lists what goldtrace reproduces bit for bit)")


if __name__ == "__main__":
    main()
