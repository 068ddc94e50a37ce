"""The platform target kernels are traced for (issue: FrameworkKernel)."""

import os
import threading
import warnings

_lock = threading.Lock()
_cached = None
FALLBACK_WARNING = "Unable to read MLA target. Assuming cross compile to trn1."

# DMI product names of Neuron instances -> target.
_PRODUCTS = {"trn1": "trn1", "trn1n": "trn1", "inf2": "inf2", "trn2": "trn2", "trn2n": "trn2", "trn2u": "trn2", "trn3": "trn3"}
MULTI_CORE_TARGETS = {"trn2", "trn2n", "trn3"}


def platform_target():
    """(target, is_fallback): NEURON_PLATFORM_TARGET_OVERRIDE, else the DMI product
    name, else trn1 with a one-time UserWarning."""
    global _cached
    env = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE")
    if env:
        return env, False
    with _lock:
        if _cached is None:
            target = None
            name = _read_product_name()
            if name:
                for prefix, t in _PRODUCTS.items():
                    if name.startswith(prefix):
                        target = t
            if target is None:
                warnings.warn(FALLBACK_WARNING, UserWarning, stacklevel=3)
                _cached = ("trn1", True)
            else:
                _cached = (target, False)
        return _cached


def _read_product_name():
    try:
        with open("/sys/class/dmi/id/product_name") as f:
            return f.read().strip().lower()
    except OSError:
        return None


def nc_version_for_target(target=None):
    from .isa.constants import nc_version

    t = target or platform_target()[0]
    return {"trn2": nc_version.gen3, "trn3": nc_version.gen4}.get(t.rstrip("n"), nc_version.gen2)


def _reset_for_tests():
    global _cached
    with _lock:
        _cached = None
