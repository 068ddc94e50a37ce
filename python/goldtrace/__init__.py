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
from .batch import batch
from ._buildinfo import build_info

__version__ = "0.1.0"

__all__ = [
    "EvaluationError", "ForkedProcessError", "GoldtraceError", "GoldtraceIOError",
    "InternalError", "InvalidArgumentError", "ParseError", "UnsupportedError",
    "Goldens", "batch", "build_info", "dtypes", "golden", "hlo", "load_npy", "save_npy", "roundtrip",
]
