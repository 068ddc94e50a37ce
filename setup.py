"""Builds goldtrace's two native pieces in order: the Go c-shared library
libgoldtrace.so (from capi/, with the local Go toolchain), then the cffi
extension goldtrace._native that links against it. Both land inside the
package, so `import goldtrace` works from any directory."""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "pybind"))
import build_native  # noqa: E402  (pybind/ is not a package)


def _require(tool: str, what: str) -> str:
    path = shutil.which(tool)
    if not path:
        sys.exit(f"goldtrace: building needs {what} ('{tool}' not found on PATH); install it and retry")
    return path


class BuildGoThenNative(build_ext):
    def run(self):
        go = _require("go", "the Go toolchain >= 1.26 (https://go.dev/dl or apt-get install golang)")
        cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
        _require(os.environ.get("CC", cc), "a C compiler (apt-get install gcc)")
        libdir = pathlib.Path(self.build_temp).resolve() / "go"
        libdir.mkdir(parents=True, exist_ok=True)
        cmd = [go, "build", "-trimpath", "-buildmode=c-shared", "-o", str(libdir / "libgoldtrace.so"), "./capi"]
        env = dict(os.environ, CGO_ENABLED="1")
        # The SIMD GEMM kernels need Go's simd experiment; the portable build
        # computes the same results, only slower. GOLDTRACE_PORTABLE=1 forces it.
        if os.environ.get("GOLDTRACE_PORTABLE") != "1":
            simd = subprocess.run(cmd, cwd=ROOT, env=dict(env, GOEXPERIMENT="simd"))
            if simd.returncode == 0:
                return self._finish(libdir)
            print("goldtrace: GOEXPERIMENT=simd build failed; building the portable library", file=sys.stderr)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        self._finish(libdir)

    def _finish(self, libdir):
        for ext in self.extensions:
            ext.include_dirs.insert(0, str(libdir))
            ext.library_dirs.insert(0, str(libdir))
            # A Python process that has the old libraries loaded (a notebook
            # kernel, a test run beside an editable reinstall) maps their
            # files: writing the new ones into the same inodes would change
            # code under it and crash it with SIGSEGV. Unlinked, the old
            # files live on for their mappings and the new ones get new inodes.
            _unlink(pathlib.Path(self.get_ext_fullpath(ext.name)))
            _unlink(pathlib.Path(self.get_ext_fullpath(ext.name)).parent / "libgoldtrace.so")
        super().run()
        for ext in self.extensions:
            dest = pathlib.Path(self.get_ext_fullpath(ext.name)).parent
            dest.mkdir(parents=True, exist_ok=True)
            staged = dest / f".libgoldtrace.so.{os.getpid()}.tmp"
            shutil.copy2(libdir / "libgoldtrace.so", staged)
            os.replace(staged, dest / "libgoldtrace.so")


def _unlink(path):
    try:
        path.unlink()
    except FileNotFoundError:
        pass


tmp = ROOT / "build" / "cffi-src"
tmp.mkdir(parents=True, exist_ok=True)
native = build_native.make_builder(str(ROOT / "build" / "go")).distutils_extension(tmpdir=str(tmp))

setup(ext_modules=[native], cmdclass={"build_ext": BuildGoThenNative})
