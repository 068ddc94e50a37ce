"""Packaging: `pip wheel .` builds a self-contained wheel that installs and
imports elsewhere; a missing Go toolchain is a one-line error naming the fix."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _copy_source(dst):
    # Build from a copy of the tracked sources, as a fresh clone would.
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        target = dst / f
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / f).exists():
            shutil.copy2(ROOT / f, target)
    return dst


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to list sources")
def test_wheel_installs_and_imports_elsewhere(tmp_path):
    src = _copy_source(tmp_path / "src")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), "."],
                   cwd=src, check=True)
    (wheel,) = dist.glob("goldtrace-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    shutil.rmtree(src)  # nothing may depend on the build tree
    code = "import goldtrace, numpy as np, ml_dtypes; " \
           "x = np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16); " \
           "(y,) = goldtrace.roundtrip(x); assert y.tobytes() == x.tobytes(); print(goldtrace.__file__)"
    out = subprocess.run([str(py), "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert str(venv) in out


def test_missing_go_is_a_one_line_error(tmp_path):
    src = _copy_source(tmp_path / "src")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # A PATH with python and the C compiler but no Go.
    for tool in ["gcc", "cc", "git"]:
        if shutil.which(tool):
            os.symlink(shutil.which(tool), bindir / tool)
    env = dict(os.environ, PATH=str(bindir))
    res = subprocess.run([sys.executable, "setup.py", "-q", "build_ext"], cwd=src, env=env, capture_output=True, text=True)
    assert res.returncode != 0
    lines = [l for l in res.stderr.splitlines() if "goldtrace:" in l]
    assert lines and "Go toolchain" in lines[0] and "install" in lines[0]
