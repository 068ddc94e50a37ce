"""goldtrace.nki.compat.install(): make `import neuronxcc.nki...` resolve to
goldtrace.nki when the real package is absent, so kernel files written for the
real thing run unchanged."""

import importlib.abc
import importlib.machinery
import importlib.util
import sys

_ALIASES = {
    "neuronxcc": "goldtrace.nki._neuronxcc_root",
    "neuronxcc.nki": "goldtrace.nki",
    "neuronxcc.nki.language": "goldtrace.nki.language",
    "neuronxcc.nki.language.constants": "goldtrace.nki.language.constants",
    "neuronxcc.nki.isa": "goldtrace.nki.isa",
    "neuronxcc.nki.isa.constants": "goldtrace.nki.isa.constants",
    "neuronxcc.nki.typing": "goldtrace.nki.typing",
    "neuronxcc.nki.compiler": "goldtrace.nki.compiler",
    # The JAX bridges of earlier Neuron SDKs: nki_call.
    "jax_neuronx": "goldtrace.nki._jax_compat",
    "neuron_jax": "goldtrace.nki._jax_compat",
    # The torch entry point of earlier Neuron SDKs: torch_neuronx.xla_impl.ops.nki_jit.
    "torch_neuronx": "goldtrace.nki._torch_neuronx_compat",
    "torch_neuronx.xla_impl": "goldtrace.nki._torch_neuronx_compat",
    "torch_neuronx.xla_impl.ops": "goldtrace.nki._torch_neuronx_compat",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        t = _ALIASES.get(fullname)
        if t is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(t), is_package=True)


_installed = False


def _present(name):
    """A real module of that name is importable (or already imported)."""
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return True


def install(force=False):
    """Install the aliases unless the real neuronxcc is importable (force=True: always).
    Returns True when goldtrace now provides neuronxcc.nki."""
    global _installed
    if _installed:
        return True
    if not force:
        for m in list(sys.modules):
            if m == "neuronxcc" or m.startswith("neuronxcc."):
                return False
        if importlib.util.find_spec("neuronxcc") is not None:
            return False
        # The JAX aliases only where those packages are absent too.
        for name in ("jax_neuronx", "neuron_jax"):
            if _present(name):
                _ALIASES.pop(name, None)
        if _present("torch_neuronx"):
            for name in ("torch_neuronx", "torch_neuronx.xla_impl", "torch_neuronx.xla_impl.ops"):
                _ALIASES.pop(name, None)
    sys.meta_path.insert(0, _AliasFinder())
    _installed = True
    return True
