"""`make bench`: goldtrace's time-to-golden against JAX's compile-and-run of the
same module on CPU, plus dot f32 1024^3 GFLOP/s beside XLA:CPU's. Results are
ratios measured in the same run; they are printed and written to
docs/benchmarks.md."""

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
from programs import programs  # noqa: E402

REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
# Benchmark what the package ships: the SIMD kernels when the toolchain has them.
GO_ENV = dict(os.environ, GOEXPERIMENT="simd")


def build_cli():
    out = os.path.join(ROOT, "build", "bin", "infergoldens")
    subprocess.run(["go", "build", "-o", out, "./cmd/infergoldens"], cwd=ROOT, check=True, env=GO_ENV)
    return out


def jax_compile_and_run(fn, args):
    """Lower, compile, run, wait, with JAX's in-memory caches cleared first so
    every repeat really compiles. The peer's time-to-output in a warm process."""
    jax.clear_caches()
    t0 = time.perf_counter()
    out = jax.jit(fn).lower(*args).compile()(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - t0


JAX_PROCESS = r"""
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
import jax
from programs import programs
import goldtrace
name = sys.argv[2]
fn = dict((n, f) for n, f, _ in programs())[name]
args = [goldtrace.load_npy(p) for p in sys.argv[4:]]
out = jax.jit(fn).lower(*args).compile()(*args)
for i, leaf in enumerate(jax.tree_util.tree_leaves(out)):
    np.save(f"{sys.argv[3]}/jax_output{i}.npy", np.asarray(leaf))
"""


def jax_process_time(name, input_paths, outdir):
    """A fresh Python process: import JAX, read the inputs, compile, run, write
    the outputs -- the like-for-like peer of infergoldens."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", JAX_PROCESS, HERE, name, outdir] + input_paths, check=True)
    return time.perf_counter() - t0


def cli_time(cli, module_path, input_paths, outdir):
    cmd = [cli, "-m", module_path, "-O", outdir]
    for p in input_paths:
        cmd += ["-i", p]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def go_dot_gflops():
    res = subprocess.run(
        ["go", "test", "-run", "^$", "-bench", "BenchmarkDotF32_1024$", "-benchtime", "5x", "./engine/eval/"],
        cwd=ROOT, check=True, capture_output=True, text=True, env=GO_ENV,
    )
    m = re.search(r"([\d.]+) GFLOP/s", res.stdout)
    if m:
        return float(m.group(1))
    m = re.search(r"BenchmarkDotF32_1024\S*\s+\d+\s+(\d+) ns/op", res.stdout)
    return 2 * 1024**3 / float(m.group(1))


def go_parse_large():
    """Parse time of a ~5 MB optimized module (engine/hlo BenchmarkParseLarge)."""
    res = subprocess.run(
        ["go", "test", "-run", "^$", "-bench", "BenchmarkParseLarge$", "-benchtime", "5x", "./engine/hlo/"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    m = re.search(r"BenchmarkParseLarge\S*\s+\d+\s+(\d+) ns/op\s+([\d.]+) MB/s", res.stdout)
    ns, mbs = float(m.group(1)), float(m.group(2))
    return ns / 1e6, mbs, ns / 1e9 * mbs


def xla_dot_gflops():
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    f = jax.jit(lambda x, y: x @ y)
    f(a, a).block_until_ready()
    best = min(_timed(lambda: f(a, a).block_until_ready()) for _ in range(10))
    return 2 * 1024**3 / best / 1e9


def _timed(thunk):
    t0 = time.perf_counter()
    thunk()
    return time.perf_counter() - t0


def main():
    cli = build_cli()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn, make_args in programs():
            args = make_args()
            module_path = os.path.join(tmp, f"{name}.hlo")
            with open(module_path, "w") as f:
                f.write(jax.jit(fn).lower(*args).as_text(dialect="hlo"))
            inputs = []
            for i, a in enumerate(args):
                p = os.path.join(tmp, f"{name}_in{i}.npy")
                goldtrace.save_npy(p, a)
                inputs.append(p)
            outdir = os.path.join(tmp, f"{name}_out")
            os.makedirs(outdir)
            ours = min(cli_time(cli, module_path, inputs, outdir) for _ in range(REPEATS))
            peer = min(jax_compile_and_run(fn, args) for _ in range(REPEATS))
            fresh = min(jax_process_time(name, inputs, outdir) for _ in range(REPEATS))
            rows.append((name, ours, peer, fresh))
            print(f"{name:14s} goldtrace {ours*1e3:8.1f} ms   jax compile+run {peer*1e3:8.1f} ms (ratio {ours/peer:5.2f})"
                  f"   jax process {fresh*1e3:8.1f} ms (ratio {ours/fresh:5.2f})", flush=True)
    ours_dot, xla_dot = go_dot_gflops(), xla_dot_gflops()
    print(f"dot f32 1024^3: goldtrace {ours_dot:.1f} GFLOP/s, XLA:CPU {xla_dot:.1f} GFLOP/s")
    parse = go_parse_large()
    print(f"parse: {parse[2]:.1f} MB module in {parse[0]:.0f} ms ({parse[1]:.0f} MB/s)")
    import large  # the real-sized modules (bench/large.py)
    large_lines = large.report_lines(*large.run(REPEATS))
    write_report(rows, ours_dot, xla_dot, parse, large_lines + avx2_pass())


def avx2_pass():
    """On an AVX-512 machine, the large modules again as an AVX2-only machine runs
    them, in a fresh process (every library reads the CPU's features once, at
    start-up). [] elsewhere."""
    if goldtrace.build_info()["simd_level"] != "avx512":
        return []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "avx2.md")
        env = dict(os.environ, BENCH_AVX2_REPORT=out, BENCH_REPEATS=str(REPEATS))
        env.update(avx2_only_env(tmp))
        subprocess.run([sys.executable, os.path.join(HERE, "large.py")], env=env, check=True)
        return [""] + open(out).read().splitlines() + [""]


def avx2_only_env(tmp):
    """Environment that makes a process see an AVX2+FMA CPU. Preferably the CPUID
    shim (bench/avx2only), which hides AVX-512, AMX and VNNI from every CPUID in the
    process, so XLA's YNNPACK and oneDNN kernels step down too; where the kernel
    has no CPUID faulting (or there is no C compiler), the two flags that only
    reach goldtrace and XLA's own code generation."""
    flags = {"GODEBUG": "cpu.avx512f=off", "XLA_FLAGS": "--xla_cpu_max_isa=AVX2", "BENCH_AVX2_MODE": "flags"}
    shim = os.path.join(tmp, "cpuid_avx2only.so")
    try:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", shim,
                        os.path.join(HERE, "avx2only", "cpuid_avx2only.c"), "-ldl"], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"AVX2 pass: no CPUID shim ({e}); using GODEBUG and XLA_FLAGS", flush=True)
        return flags
    # Statically linked Go programs (go test's FMA peak, infergoldens) never load the
    # shim, so they are told directly.
    env = {"LD_PRELOAD": shim, "GODEBUG": "cpu.avx512f=off", "BENCH_AVX2_MODE": "cpuid"}
    probe = subprocess.run([sys.executable, "-c", "import goldtrace; print(goldtrace.build_info()['simd_level'])"],
                           env=dict(os.environ, **env), capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "avx2":
        print(f"AVX2 pass: CPUID shim unusable here ({probe.stderr.strip() or probe.stdout.strip()}); "
              "using GODEBUG and XLA_FLAGS", flush=True)
        return flags
    return env


def machine():
    """The machine every table was measured on: CPU model, the SIMD features the
    kernels can use, cores, and the vector code goldtrace chose there."""
    info = goldtrace.build_info()
    feats = [f for f in info["cpu_features"] if f.startswith(("avx", "fma", "f16c"))]
    return (f"{info.get('cpu_model') or platform.processor() or platform.machine()} ({platform.machine()}), "
            f"{os.cpu_count()} cores, SIMD features {', '.join(feats) or 'none'}; goldtrace "
            f"{info['go_version']} build, SIMD level {info['simd_level']} (GEMM kernel {info['gemm_kernel']})")


def _with_machine(lines, mach):
    """lines with a Machine: line under every table heading (the AVX2 pass's
    says which kernels it ran instead of the ones this process chose)."""
    import large

    out = []
    for line in lines:
        out.append(line)
        if line.startswith("## "):
            m = mach
            if line in (large.AVX2_HEADING, large.AVX2_FLAGS_HEADING):
                how = "the CPUID shim" if line == large.AVX2_HEADING else "GODEBUG=cpu.avx512f=off"
                m = re.sub(r"SIMD level \S+ \(GEMM kernel \S+\)",
                           f"SIMD level avx2 (GEMM kernel avx2) with {how}", mach)
            out += ["", f"Machine: {m}."]
    return out


def write_report(rows, ours_dot, xla_dot, parse, large_lines=()):
    mach = machine()
    geo = float(np.exp(np.mean([np.log(o / p) for _, o, p, _ in rows])))
    geo_fresh = float(np.exp(np.mean([np.log(o / f) for _, o, _, f in rows])))
    lines = [
        "# Benchmarks",
        "",
        f"Measured by `make bench`, jax {jax.__version__}, {time.strftime('%Y-%m-%d')}. "
        "Ratios are goldtrace / peer in the same run (lower is better for goldtrace).",
        "",
        "## Time to golden vs. JAX compile-and-run on CPU",
        "",
        f"Machine: {mach}.",
        "",
        "goldtrace: `infergoldens` process start to `value_output*.npy` written (module text and .npy inputs on disk).",
        "JAX warm: `jax.jit(f).lower(*args).compile()(*args)` in a process that has imported JAX already, "
        "with `jax.clear_caches()` before each repeat so it really compiles (the JAX import is not counted).",
        "JAX process: a fresh Python process that imports JAX, reads the same .npy inputs, compiles, runs and "
        "writes the outputs -- the like-for-like peer of `infergoldens`.",
        f"Best of {REPEATS}.",
        "",
        "| module | goldtrace ms | JAX warm ms | ratio | JAX process ms | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {n} | {o*1e3:.1f} | {p*1e3:.1f} | {o/p:.2f} | {f*1e3:.1f} | {o/f:.2f} |" for n, o, p, f in rows]
    lines += [
        f"| geometric mean | | | {geo:.2f} | | {geo_fresh:.2f} |",
        "",
        "## dot f32 1024x1024x1024",
        "",
        f"Machine: {mach}.",
        "",
        "| engine | GFLOP/s |",
        "|---|---:|",
        f"| goldtrace (engine/eval BenchmarkDotF32_1024) | {ours_dot:.1f} |",
        f"| XLA:CPU (jax.jit, warm) | {xla_dot:.1f} |",
        f"| ratio | {ours_dot/xla_dot:.2f} |",
        "",
        "## HLO text parsing",
        "",
        f"Machine: {mach}.",
        "",
        f"A {parse[2]:.1f} MB XLA:CPU-optimized module (engine/hlo BenchmarkParseLarge) parses in "
        f"{parse[0]:.0f} ms ({parse[1]:.0f} MB/s).",
        "",
    ] + _with_machine(large_lines, mach)
    path = os.path.join(ROOT, "docs", "benchmarks.md")
    extra = ""
    if os.path.exists(path):
        text = open(path).read()
        marker = "<!-- more -->"
        if marker in text:
            extra = text[text.index(marker):]
    with open(path, "w") as f:
        f.write("\n".join(lines) + ("\n" + extra if extra else ""))


if __name__ == "__main__":
    main()
