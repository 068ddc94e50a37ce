"""The pre-2.23 JAX entry point `nki_call(kernel, *args, grid=, out_shape=)`
(as `jax_neuronx` / `neuron_jax` exported it): the kernel takes its outputs
as trailing arguments and writes them; JAX gets them back as results."""

from .errors import KernelError


def nki_call(kernel, *args, grid=None, out_shape=None, **kwargs):
    """Call an output-argument style kernel on JAX arrays; returns the outputs
    (one array, or a tuple when out_shape is a sequence)."""
    import jax.numpy as jnp

    from . import jit
    from ._kernel import Kernel

    if out_shape is None:
        raise KernelError("nki_call needs out_shape= (a jax.ShapeDtypeStruct or a sequence of them)")
    outs = tuple(out_shape) if isinstance(out_shape, (tuple, list)) else (out_shape,)
    k = kernel if isinstance(kernel, Kernel) else jit(kernel)
    if grid:
        k = k[tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)]
    buffers = [jnp.zeros(o.shape, o.dtype) for o in outs]
    res = k.call_jax(tuple(args) + tuple(buffers), kwargs)
    if not isinstance(res, tuple):
        res = (res,)
    if len(res) != len(outs):
        raise KernelError(f"nki_call: the kernel wrote {len(res)} of its {len(outs)} output arguments")
    return res if isinstance(out_shape, (tuple, list)) else res[0]
