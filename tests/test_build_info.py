"""goldtrace.build_info(): the installed library says how it was built, and it
is the SIMD build (GOEXPERIMENT=simd, what setup.py builds first) whenever the
Go toolchain here can build that. setup.py falls back to the portable build
with a message `pip -q` hides; this test is what notices."""

import os
import platform
import shutil
import subprocess

import pytest

import goldtrace
from reference import required

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _go():
    go = shutil.which("go")
    if go is None:
        if required():
            pytest.fail("the Go toolchain is not on PATH (needed to check the installed build)")
        pytest.skip("needs the Go toolchain")
    return go


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_build_info_describes_the_library():
    info = goldtrace.build_info()
    for key in ("go_version", "goos", "goarch", "build_tags", "simd_experiment", "simd_level",
                "gemm_kernel", "vector_math", "rsqrt_matches_xla", "cpu_features", "num_cpu"):
        assert key in info, key
    assert info["simd_level"] in ("avx512", "avx2", "portable")
    assert info["go_version"].startswith("go1.")
    assert ("goexperiment.simd" in info["build_tags"]) == info["simd_experiment"]
    flags = _cpu_flags()
    if flags is not None and info["goarch"] == "amd64":
        for feat in ("avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_fp16"):
            assert (feat in info["cpu_features"]) == (feat in flags), feat


def test_go_version_is_the_toolchains():
    go = _go()
    version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    # runtime.Version() appends the experiments: go1.26.8-X:simd
    assert goldtrace.build_info()["go_version"].split("-X:")[0] == version


def test_installed_library_is_the_simd_build_when_the_toolchain_supports_it():
    go = _go()
    env = dict(os.environ, GOEXPERIMENT="simd", CGO_ENABLED="1")
    probe = subprocess.run([go, "list", "simd/archsimd"], cwd=ROOT, env=env, capture_output=True, text=True)
    info = goldtrace.build_info()
    if probe.returncode != 0 or platform.machine() not in ("x86_64", "AMD64"):
        assert not info["simd_experiment"], "a SIMD build where the toolchain has no simd/archsimd"
        return
    assert info["simd_experiment"], (
        "the installed libgoldtrace is the portable build although this toolchain builds "
        f"GOEXPERIMENT=simd (build_info: {info})")
    feats = set(info["cpu_features"])
    if {"avx2", "fma"} <= feats:
        assert info["simd_level"] in ("avx2", "avx512"), info
        assert info["rsqrt_matches_xla"], info
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= feats:
        assert info["simd_level"] == "avx512", info
