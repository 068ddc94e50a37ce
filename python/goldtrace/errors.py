"""Exceptions raised by goldtrace. Each native status code maps to one class, so a
script can rely on the type: catch GoldtraceError for all of them."""


class GoldtraceError(Exception):
    """Base class of every error goldtrace raises."""


class InvalidArgumentError(GoldtraceError, ValueError):
    """An argument has the wrong shape, dtype, count or value."""


class ParseError(GoldtraceError, ValueError):
    """Malformed HLO text, HLO proto or .npy data."""


class EvaluationError(GoldtraceError, RuntimeError):
    """Evaluation failed at an instruction."""


class GoldtraceIOError(GoldtraceError, OSError):
    """A file is missing, unreadable or unwritable."""


class UnsupportedError(GoldtraceError, NotImplementedError):
    """An opcode, element type or custom-call target goldtrace does not support."""


class InternalError(GoldtraceError, RuntimeError):
    """A bug in goldtrace (a recovered Go panic). Please report it with the message."""


class ForkedProcessError(GoldtraceError, RuntimeError):
    """goldtrace was used in a child forked after it loaded; the Go runtime does not survive fork()."""


# Indexed by the GT_ERR_* status codes of capi/goldtrace.h.
STATUS_ERRORS = {
    1: InvalidArgumentError,
    2: ParseError,
    3: EvaluationError,
    4: GoldtraceIOError,
    5: UnsupportedError,
    6: InvalidArgumentError,
    7: InternalError,
}
