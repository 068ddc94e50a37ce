"""cffi (API mode) build script for goldtrace._native.

The extension links against libgoldtrace.so, the Go c-shared library built from
capi/, and finds it next to itself at run time through an $ORIGIN rpath.
`GOLDTRACE_LIBDIR` names the directory holding libgoldtrace.so and
libgoldtrace.h (setup.py sets it after running `go build`).
"""

import os
import pathlib

import cffi

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def make_builder(libdir: str) -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef((HERE / "cdef.h").read_text())
    ffi.set_source(
        "goldtrace._native",
        '#include "libgoldtrace.h"\n',
        include_dirs=[libdir, str(ROOT / "capi")],
        library_dirs=[libdir],
        libraries=["goldtrace"],
        extra_link_args=["-Wl,-rpath,$ORIGIN"],
    )
    return ffi


ffibuilder = make_builder(os.environ.get("GOLDTRACE_LIBDIR", str(ROOT / "build" / "go")))

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
