"""goldtrace: NKI-style kernels traced to a compact IR, and bit-faithful CPU
reference outputs ("goldens") for whole HLO modules."""

from . import dtypes
from .errors import (
    EvaluationError,
    ForkedProcessError,
    GoldtraceError,
    GoldtraceIOError,
    InternalError,
    InvalidArgumentError,
    ParseError,
    UnsupportedError,
)
from .npy import load_npy, save_npy
from ._bridge import roundtrip
from . import hlo
from .golden import Goldens, golden
from ._buildinfo import build_info

__version__ = "0.1.0"

__all__ = [
    "EvaluationError", "ForkedProcessError", "GoldtraceError", "GoldtraceIOError",
    "InternalError", "InvalidArgumentError", "ParseError", "UnsupportedError",
    "Goldens", "batch", "build_info", "dtypes", "golden", "hlo", "load_npy", "save_npy", "roundtrip",
]


def batch(source, **options):
    """Goldens of many modules: a directory tree, a JSON-lines manifest or a
    list of jobs, resumable, on a local process pool or a Dask cluster. See
    goldtrace._batch.batch for the arguments; `infergoldens batch --help` for
    the command line. (Imported on first use, so `import goldtrace` stays light.)"""
    from ._batch import batch as run

    return run(source, **options)

