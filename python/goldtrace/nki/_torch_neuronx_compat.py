"""What `torch_neuronx.xla_impl.ops` gave kernels before the 2.21 SDK:
nki_jit(kernel), the decorator torch scripts wrap kernels with
(compat.install() maps the module here when torch_neuronx is absent)."""

from . import jit as nki_jit  # noqa: F401
