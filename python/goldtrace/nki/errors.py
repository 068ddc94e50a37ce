"""Errors of the kernel path. Each is a goldtrace.GoldtraceError, and each
message starts with the kernel's own `file:line`."""

import os
import sys

from ..errors import EvaluationError, InvalidArgumentError, UnsupportedError

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class KernelError(InvalidArgumentError):
    """A kernel breaks a rule of the language or the hardware (validation,
    shapes, dtypes, out-of-bounds access, an immutable parameter written)."""


class SymbolicValueError(KernelError):
    """A loop variable or index was used where Python needs a concrete value."""


class KernelRuntimeError(EvaluationError):
    """The simulator failed while running a kernel."""


class KernelUnsupportedError(UnsupportedError):
    """A feature the kernel uses that goldtrace does not implement."""


# co_filename -> whether the file is goldtrace.nki's own (or frozen
# importlib) code. Every traced instruction asks twice, so the prefix tests
# run once per file.
_OWN_FILE = {}


def is_own_file(fn):
    o = _OWN_FILE[fn] = fn.startswith(_PKG_DIR) or fn.startswith("<frozen")
    return o


def user_frame(depth=1):
    """The innermost frame outside goldtrace.nki (the kernel's own code),
    looking from `depth` frames up (callers that know their own frames are
    goldtrace's skip them: each frame the walk visits is materialized)."""
    f = sys._getframe(depth)
    own = _OWN_FILE
    while f is not None:
        fn = f.f_code.co_filename
        o = own.get(fn)
        if o is None:
            o = is_own_file(fn)
        if not o:
            return f
        f = f.f_back
    return None


def user_location():
    f = user_frame()
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"
