"""The real-sized modules of `make bench` (programs_large.py): in-process
`goldtrace.golden` on the module's HLO text against
`jax.jit(f).lower(...).compile()(...)` with JAX's caches cleared, in the same
run, best of N; peak RSS of an `infergoldens` run of the same module and
inputs; for the big dots and convolutions GFLOP/s beside XLA:CPU's (its
compiled executable, warm) and beside this machine's FMA peak measured in the
same run. Run alone with `python3 bench/large.py [name...]`."""

import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import jax  # noqa: E402

import goldtrace  # noqa: E402
from programs_large import programs  # noqa: E402

GO_ENV = dict(os.environ, GOEXPERIMENT="simd")


def cpu_description():
    """The CPU model and the SIMD features that matter to the kernels."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model in ("", platform.machine(), platform.processor()):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
              "amx_bf16"]
    if os.environ.get("BENCH_AVX2_MODE") == "cpuid":
        # bench/run.py's AVX2 pass: CPUID hides these from every library in the process.
        flags = {f for f in flags if not f.startswith(("avx512", "amx"))}
    return model, [f for f in wanted if f in flags]


def fma_peak():
    """GFLOP/s of the engine/eval BenchmarkFMAPeak loop on every core, or None."""
    res = subprocess.run(
        ["go", "test", "-run", "^$", "-bench", "BenchmarkFMAPeak$", "-benchtime", "5x", "-count", "3", "./engine/eval/"],
        cwd=ROOT, capture_output=True, text=True, env=GO_ENV,
    )
    vals = [float(v) for v in re.findall(r"([\d.]+) GFLOP/s", res.stdout)]
    return max(vals) if vals else None


def build_cli():
    out = os.path.join(ROOT, "build", "bin", "infergoldens")
    subprocess.run(["go", "build", "-o", out, "./cmd/infergoldens"], cwd=ROOT, check=True, env=GO_ENV)
    return out


# A child's ru_maxrss counts what it inherited before exec, so the CLI is
# started from a small Python process rather than from this JAX-sized one.
RSS_PROBE = (
    "import os, re, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)\n"
    "out = p.stdout.read()\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "m = re.search(r'values live at once: at most ([0-9.]+) MB', out)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, m.group(1) if m else 'nan')\n"
)


def peak_rss_mb(cli, module_path, input_paths, outdir):
    """(peak resident set, largest set of values live at once) of one
    infergoldens --report-memory run, in MB (its own rusage; its own report)."""
    cmd = [cli, "--report-memory", "-m", module_path, "-O", outdir]
    for p in input_paths:
        cmd += ["-i", p]
    res = subprocess.run([sys.executable, "-c", RSS_PROBE] + cmd, check=True, capture_output=True, text=True)
    code, kb, live = res.stdout.split()
    if code != "0":
        raise RuntimeError(f"infergoldens failed on {module_path}")
    return int(kb) / 1024, float(live)


def _best(thunk, n):
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        thunk()
        best = min(best, time.perf_counter() - t0)
    return best


def run(repeats=3, only=()):
    """Measure every large program; returns (rows, peak GFLOP/s, cpu)."""
    cli = build_cli()
    peak = fma_peak()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn, make_args, flops in programs():
            if only and name not in only:
                continue
            args = make_args()
            text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
            np_args = [np.asarray(a) for a in args]
            outs = goldtrace.golden(text, *np_args)  # warm the process (first-touch, page faults)
            ours = peer = float("inf")
            for _ in range(repeats):
                ours = min(ours, _best(lambda: goldtrace.golden(text, *np_args), 1))

                def xla():
                    jax.clear_caches()
                    jax.block_until_ready(jax.jit(fn).lower(*args).compile()(*args))
                peer = min(peer, _best(xla, 1))
            compiled = jax.jit(fn).lower(*args).compile()
            jax.block_until_ready(compiled(*args))
            xla_run = _best(lambda: jax.block_until_ready(compiled(*args)), repeats)
            module_path = os.path.join(tmp, f"{name}.hlo")
            with open(module_path, "w") as f:
                f.write(text)
            inputs = []
            for i, a in enumerate(np_args):
                p = os.path.join(tmp, f"{name}_in{i}.npy")
                goldtrace.save_npy(p, a)
                inputs.append(p)
            outdir = os.path.join(tmp, f"{name}_out")
            os.makedirs(outdir)
            rss, live_mb = peak_rss_mb(cli, module_path, inputs, outdir)
            io_mb = (sum(a.nbytes for a in np_args) + sum(np.asarray(o).nbytes for o in outs)) / 2**20
            row = dict(name=name, ours=ours, peer=peer, xla_run=xla_run, rss=rss, io_mb=io_mb, live_mb=live_mb,
                       flops=flops)
            rows.append(row)
            line = (f"{name:14s} goldtrace {ours*1e3:8.1f} ms   xla compile+run {peer*1e3:8.1f} ms (ratio {ours/peer:5.2f})"
                    f"   peak RSS {rss:7.1f} MB (inputs+outputs {io_mb:6.1f} MB, live at once {live_mb:6.1f} MB,"
                    f" bound {rss_bound(row):6.1f} MB)")
            if flops:
                line += f"   GFLOP/s goldtrace {flops/ours/1e9:6.1f} xla run {flops/xla_run/1e9:6.1f}"
            print(line, flush=True)
    return rows, peak, cpu_description()


def rss_bound(r):
    """Issue 12's memory bound: 1.5 × (inputs + outputs + the largest set of values live at once)."""
    return 1.5 * (r["io_mb"] + r["live_mb"])


AVX2_HEADING = "## Real-sized modules as an AVX2-only machine runs them"

AVX2_NOTE = (
    "The same modules in a process that sees an AVX2+FMA CPU: `bench/avx2only/cpuid_avx2only.c`, "
    "preloaded, uses Linux's CPUID faulting to hide AVX-512, AMX and VNNI from every CPUID the process "
    "runs. goldtrace picks its AVX2 kernels, and XLA:CPU its AVX2 code and its AVX2 YNNPACK dot and "
    "convolution kernels (`ynn::dot_fp32_6x16x1_1x8x1_fma3` in perf), as on an AVX2-only machine. "
    "The cores, caches and clock are still this machine's."
)

AVX2_FLAGS_HEADING = "## Real-sized modules with AVX-512 turned off on both sides"

AVX2_FLAGS_NOTE = (
    "The same modules with goldtrace's AVX2 kernels (`GODEBUG=cpu.avx512f=off`) against XLA:CPU told "
    "`XLA_FLAGS=--xla_cpu_max_isa=AVX2` (this kernel has no CPUID faulting for the shim in "
    "`bench/avx2only`). XLA's own code generation obeys the flag; its YNNPACK dot and convolution "
    "kernels pick their instruction set themselves and still run AVX-512 here, so the dot and conv rows "
    "below compare goldtrace's AVX2 GEMM against an AVX-512 one."
)

LARGE_HEADING = "## Real-sized modules: time to golden vs. XLA:CPU compile-and-run"


def report_lines(rows, peak, cpu, heading=LARGE_HEADING, note=None):
    """The docs/benchmarks.md section of the large modules."""
    model, feats = cpu
    geo = float(np.exp(np.mean([np.log(r["ours"] / r["peer"]) for r in rows]))) if rows else float("nan")
    lines = [heading, ""] + ([note, ""] if note else []) + [
        f"CPU: {model}, {os.cpu_count()} cores, SIMD: {', '.join(feats) or 'none'}. "
        f"FMA peak measured in the same run (engine/eval BenchmarkFMAPeak, every core): "
        + (f"{peak:.0f} GFLOP/s." if peak else "n/a (portable build)."),
        "",
        "goldtrace: in-process `goldtrace.golden(hlo_text, *numpy_inputs)` (parse, legalize, evaluate, outputs as numpy). "
        "XLA:CPU: `jax.jit(f).lower(*args).compile()(*args)` after `jax.clear_caches()`. Best of the repeats, "
        "interleaved. Peak RSS: one `infergoldens --report-memory` process on the same module and .npy inputs; live at once: the "
        "largest total of the values live at the same time, as that run reports it; bound: 1.5 × (inputs + outputs + "
        "live at once). "
        "GFLOP/s: the module's dot/conv multiply-adds (2 flops each) over goldtrace's whole time-to-golden, and over "
        "the compiled XLA:CPU executable's run time alone (warm).",
        "",
        "| module | goldtrace ms | XLA:CPU compile+run ms | ratio | peak RSS MB | inputs+outputs MB | "
        "live at once MB | RSS bound MB | GFLOP/s goldtrace | GFLOP/s XLA:CPU run | goldtrace / FMA peak |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        g = x = pk = ""
        if r["flops"]:
            g, x = f"{r['flops']/r['ours']/1e9:.1f}", f"{r['flops']/r['xla_run']/1e9:.1f}"
            if peak:
                pk = f"{r['flops']/r['ours']/1e9/peak:.2f}"
        lines.append(f"| {r['name']} | {r['ours']*1e3:.1f} | {r['peer']*1e3:.1f} | {r['ours']/r['peer']:.2f} | "
                     f"{r['rss']:.0f} | {r['io_mb']:.0f} | {r['live_mb']:.0f} | {rss_bound(r):.0f}"
                     f"{'' if r['rss'] <= rss_bound(r) else ' (exceeded)'} | {g} | {x} | {pk} |")
    lines += [f"| geometric mean | | | {geo:.2f} | | | | | | | |", ""]
    return lines


if __name__ == "__main__":
    rows, peak, cpu = run(int(os.environ.get("BENCH_REPEATS", "3")), sys.argv[1:])
    if os.environ.get("BENCH_AVX2_REPORT"):
        # bench/run.py's AVX2 pass: the section goes to the file it names.
        with open(os.environ["BENCH_AVX2_REPORT"], "w") as f:
            if os.environ.get("BENCH_AVX2_MODE") == "flags":
                heading, note = AVX2_FLAGS_HEADING, AVX2_FLAGS_NOTE
            else:
                heading, note = AVX2_HEADING, AVX2_NOTE
            f.write("\n".join(report_lines(rows, peak, cpu, heading, note)))
    else:
        print("\n".join(report_lines(rows, peak, cpu)))
