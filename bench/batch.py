"""`make bench`, the batch runner: 500 small modules in the modular-flow layout,
`infergoldens batch` against a shell loop that calls the single-module CLI once
per module, in the same run (best of BENCH_REPEATS); then the rerun with
nothing changed (every job skipped by its done-marker). Writes the section
between the batch markers of docs/benchmarks.md."""

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import goldtrace  # noqa: E402
import batch_modules  # noqa: E402

N = int(os.environ.get("BENCH_BATCH_MODULES", "500"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
BEGIN, END = "<!-- batch -->", "<!-- /batch -->"


def build_cli():
    out = os.path.join(ROOT, "build", "bin", "infergoldens")
    cmd = ["go", "build", "-o", out, "./cmd/infergoldens"]
    if subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, GOEXPERIMENT="simd")).returncode != 0:
        subprocess.run(cmd, cwd=ROOT, check=True)
    return out


LOOP = r"""
set -e
cd "$1"; cli="$2"; out="$3"
for d in nc*/sg*; do
  args=()
  for f in "$d"/in[0-9]*.npy "$d"/input[0-9]*.npy; do [ -e "$f" ] && args+=(-i "$f"); done
  "$cli" -m "$d/model.hlo" "${args[@]}" -O "$out/$d"
done
"""


def timed(cmd, **kw):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def medium(k):
    """A module of about 50 ms of evaluation (a 3000-step while loop)."""
    import numpy as np

    return batch_modules.slow_module(k, 3000), [np.linspace(-1, 1, 64, dtype=np.float32)], None


def measure(cli, n, make):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(goldtrace.__file__)))
    batch_cmd = [sys.executable, "-m", "goldtrace.cli", "batch", "--no-progress"]
    loop_t, batch_t, resume_t = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "model")
        batch_modules.write_tree(tree, n, per_nc=100, make=make)
        for r in range(REPEATS):
            lo, bo = os.path.join(tmp, f"loop{r}"), os.path.join(tmp, f"batch{r}")
            loop_t.append(timed(["bash", "-c", LOOP, "loop", tree, cli, lo]))
            batch_t.append(timed(batch_cmd + [tree, "-O", bo], env=env))
            resume_t.append(timed(batch_cmd + [tree, "-O", bo], env=env))
            # The same goldens, byte for byte.
            for dirpath, _, files in os.walk(lo):
                for f in files:
                    a = os.path.join(dirpath, f)
                    b = os.path.join(bo, os.path.relpath(a, lo))
                    with open(a, "rb") as x, open(b, "rb") as y:
                        assert x.read() == y.read(), f"{b} differs from the CLI's"
            shutil.rmtree(lo)
            shutil.rmtree(bo)
    loop, bat, res = min(loop_t), min(batch_t), min(resume_t)
    print(f"batch, {n} modules: shell loop {loop:.2f} s, infergoldens batch {bat:.2f} s (speedup {loop/bat:.2f}x), "
          f"rerun with nothing changed {res:.2f} s ({loop/res:.1f}x)", flush=True)
    return loop, bat, res


def main():
    cli = build_cli()
    loop, bat, res = measure(cli, N, batch_modules.module)
    n_med = max(1, N // 5)
    mloop, mbat, mres = measure(cli, n_med, medium)
    load = os.getloadavg()[0]
    section = [
        BEGIN,
        "",
        f"## Batch runner: {N} small modules",
        "",
        f"Measured by `make bench` (bench/batch.py) on {platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}, load average {load:.1f} at the end of the run (a shared machine: "
        f"the pool's speedup is bounded by the idle cores), best of {REPEATS}. {N} small modules (elementwise, bf16, tuple, reduce; "
        "tests/batch_modules.py) in the modular-flow layout `nc*/sg*/model.hlo`, two thirds with `in<i>.npy` "
        "inputs. Peer: a bash loop calling the compiled single-module `infergoldens` once per module. Both "
        "write the same goldens, byte for byte (checked). The batch time is the whole command: Python start, "
        "discovery, hashing, spawning the workers, done-markers and summary.json.",
        "",
        "| run | seconds | speedup vs. the loop |",
        "|---|---:|---:|",
        f"| shell loop over `infergoldens` | {loop:.2f} | 1.00 |",
        f"| `infergoldens batch` (local pool, one worker per core) | {bat:.2f} | {loop/bat:.2f} |",
        f"| `infergoldens batch` again, nothing changed (all skipped) | {res:.2f} | {loop/res:.2f} |",
        "",
        f"The same with {n_med} modules of about 50 ms of evaluation each on an idle core (a 3000-step while loop). "
        "The runner's fixed start (Python, the workers' imports: 1-2 s on a loaded machine) is paid once; "
        "with other processes on the cores, repeated runs of this benchmark have varied widely.",
        "",
        "| run | seconds | speedup vs. the loop |",
        "|---|---:|---:|",
        f"| shell loop over `infergoldens` | {mloop:.2f} | 1.00 |",
        f"| `infergoldens batch` | {mbat:.2f} | {mloop/mbat:.2f} |",
        f"| `infergoldens batch` again, nothing changed | {mres:.2f} | {mloop/mres:.2f} |",
        "",
        END,
    ]
    path = os.path.join(ROOT, "docs", "benchmarks.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + "\n".join(section) + text[text.index(END) + len(END):]
    else:
        if "<!-- more -->" not in text:
            text = text.rstrip("\n") + "\n\n<!-- more -->\n"
        text = text.rstrip("\n") + "\n\n" + "\n".join(section) + "\n"
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
