"""Stands in for `jax_neuronx` / `neuron_jax` under goldtrace.nki.compat.install()."""

from ._nki_call import nki_call  # noqa: F401
from . import jit as nki_jit  # noqa: F401
