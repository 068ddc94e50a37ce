"""Stands in for the `neuronxcc` package under goldtrace.nki.compat.install()."""

from goldtrace import nki  # noqa: F401
