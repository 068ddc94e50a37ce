"""The torch bridge: kernels called on torch tensors.

On XLA tensors (torch-xla) a kernel becomes one HLO custom-call with target
``AwsNeuronNkiKernel`` whose ``backend_config`` is the kernel's config, whose
``output_operand_aliasing`` lists the outputs written into input buffers and
whose frontend attribute ``has_collectives=1`` marks kernels with collectives.

torch-xla's own ``_xla_custom_call`` cannot carry aliasing, and its lazy-IR
node hashes only the target name, so two specializations of one kernel on the
same shapes would share one compiled program. The call is therefore staged as
a *user computation*: the custom-call is built once per configuration on
placeholder tensors (no device buffers), its HloModuleProto gets the aliasing
written in (field 74 of HloInstructionProto), and the module becomes an
``XlaComputation`` that ``_xla_user_computation`` calls. That node hashes the
whole computation, so configs and aliasings that differ give different graph
hashes and identical ones the same.

On CPU torch tensors a kernel runs in the simulator: torch in, torch out.

torch is imported only when a torch tensor is seen.
"""

import threading
from collections import OrderedDict

import ml_dtypes
import numpy as np

from .. import dtypes as _xla_dtypes
from . import _dtypes
from .errors import KernelError

try:  # the lead's FrameworkKernel; the hooks below are all this module needs of it
    from ._framework import FrameworkKernel as _Base
except ImportError:  # pragma: no cover - only while _framework is not there
    _Base = object

TARGET = "AwsNeuronNkiKernel"

#: custom_call_api_version of the emitted call. 1 (API_VERSION_ORIGINAL) is the
#: plain untyped custom-call: XLA prints no api_version attribute for it (so the
#: text is the canonical form every HLO parser reads), XLA:CPU's compiler accepts
#: it (0, UNSPECIFIED, is refused at compile), the backend_config stays the raw
#: base64 string (4, TYPED_FFI, would make XLA parse it as an MLIR dictionary),
#: and Neuron's custom calls are not status-returning (2, 3).
API_VERSION = 1

_HAS_COLLECTIVES_ATTR = "has_collectives"

# -- dtypes -------------------------------------------------------------------

_TORCH_TO_NP = None
_NP_TO_TORCH = None


def _dtype_maps():
    global _TORCH_TO_NP, _NP_TO_TORCH
    if _TORCH_TO_NP is None:
        import torch

        pairs = [
            (torch.bfloat16, np.dtype(ml_dtypes.bfloat16)),
            (torch.float16, np.dtype(np.float16)),
            (torch.float32, np.dtype(np.float32)),
            (torch.int8, np.dtype(np.int8)),
            (torch.int16, np.dtype(np.int16)),
            (torch.int32, np.dtype(np.int32)),
            (torch.uint8, np.dtype(np.uint8)),
            (torch.uint16, np.dtype(np.uint16)),
            (torch.uint32, np.dtype(np.uint32)),
            (torch.bool, np.dtype(np.bool_)),
            (torch.float8_e4m3fn, np.dtype(ml_dtypes.float8_e4m3fn)),
            (torch.float8_e5m2, np.dtype(ml_dtypes.float8_e5m2)),
        ]
        # Not kernel dtypes, mapped so the kernel language's own message
        # ("float64 is not supported by the hardware; use nl.float32") is the one shown.
        pairs_unsupported = [(torch.float64, np.dtype(np.float64)), (torch.int64, np.dtype(np.int64)),
                             (torch.uint64, np.dtype(np.uint64))]
        _NP_TO_TORCH = {n: t for t, n in pairs}
        _TORCH_TO_NP = dict(pairs + pairs_unsupported)
    return _TORCH_TO_NP, _NP_TO_TORCH


def translate_to_neuron_dtype(dtype):
    """The kernel dtype (numpy / ml_dtypes) of a torch dtype (a kernel dtype
    passes through); KernelError if none."""
    to_np, _ = _dtype_maps()
    try:
        dt = to_np[dtype]
    except TypeError:
        return _dtypes.canonical(dtype)
    except KeyError:
        if type(dtype).__module__ != "torch":
            return _dtypes.canonical(dtype)
        raise KernelError(f"torch dtype {dtype} has no kernel dtype (kernels take bfloat16, float16, float32, "
                          "int8/16/32, uint8/16/32, bool, float8_e4m3fn and float8_e5m2)") from None
    return _dtypes.canonical(dt)


def torch_dtype_of(dtype):
    """The torch dtype of a kernel dtype; KernelError if torch has none."""
    _, to_torch = _dtype_maps()
    dt = _dtypes.storage(_dtypes.canonical(dtype))
    try:
        return to_torch[dt]
    except KeyError:
        raise KernelError(f"kernel dtype {dt.name} has no torch dtype") from None


def _is_torch_tensor(x):
    t = type(x)
    mod = t.__module__
    if not (mod == "torch" or mod.startswith("torch.")):
        return False
    import torch

    return isinstance(x, torch.Tensor)


def is_torch_tensor(x):
    """True for any torch.Tensor (without importing torch for other values)."""
    return _is_torch_tensor(x)


def is_torch_xla_tensor(x):
    """True for a torch tensor on an XLA device."""
    return _is_torch_tensor(x) and x.device.type == "xla"


def map_torch_tensor(t):
    """(shape, kernel dtype) of a torch tensor."""
    return tuple(int(s) for s in t.shape), translate_to_neuron_dtype(t.dtype)


# -- torch <-> numpy (CPU) -------------------------------------------------------

# dtypes torch.Tensor.numpy() refuses: go through an integer view of the same width.
_BITS_VIEW = {"bfloat16": ("int16", np.int16), "float8_e4m3fn": ("uint8", np.uint8), "float8_e5m2": ("uint8", np.uint8),
              "uint16": ("int16", np.int16), "uint32": ("int32", np.int32)}


def torch_to_numpy(t):
    """A numpy view of a CPU torch tensor (shares memory, so writes show in t)."""
    import torch

    dt = translate_to_neuron_dtype(t.dtype)  # KernelError for dtypes kernels do not take
    t = t.detach()
    if t.device.type != "cpu":
        raise KernelError(f"tensor on device {t.device} cannot run in the simulator; move it to the CPU or to an XLA device")
    name = dt.name
    if name in _BITS_VIEW:
        tname, _ = _BITS_VIEW[name]
        return t.view(getattr(torch, tname)).numpy().view(dt)
    return t.numpy()


def numpy_to_torch(a):
    """A CPU torch tensor holding numpy array a (shares memory where it can)."""
    import torch

    a = np.asarray(a)
    tdt = torch_dtype_of(a.dtype)
    if not a.flags.writeable:
        a = a.copy()
    name = np.dtype(a.dtype).name
    if name in _BITS_VIEW:
        _, npint = _BITS_VIEW[name]
        return torch.from_numpy(np.ascontiguousarray(a).view(npint)).view(tdt)
    return torch.from_numpy(np.ascontiguousarray(a))


def _convert_tree(x, fn, pred):
    if pred(x):
        return fn(x)
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_convert_tree(v, fn, pred) for v in x)
    if isinstance(x, list):
        return [_convert_tree(v, fn, pred) for v in x]
    return x


def run_torch_cpu(kernel, args, kwargs):
    """Run kernel on CPU torch tensors in the simulator; outputs are CPU torch
    tensors (a tuple when the kernel returns a sequence). Old-style kernels
    (outputs passed as arguments) write into the argument tensors and return None."""
    nargs = [torch_to_numpy(a) if _is_torch_tensor(a) else a for a in args]
    nkwargs = {k: (torch_to_numpy(v) if _is_torch_tensor(v) else v) for k, v in kwargs.items()}
    out = kernel.run_numpy(tuple(nargs), nkwargs)
    if out is None:
        return None
    return _convert_tree(out, numpy_to_torch, lambda v: isinstance(v, np.ndarray))


# -- protobuf wire editing (no protobuf package needed) ----------------------------

def _read_varint(b, i):
    shift = result = 0
    while True:
        if i >= len(b):
            raise KernelError("torch-xla HLO proto: truncated varint")
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise KernelError("torch-xla HLO proto: varint too long")


def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _fields(b):
    """[(field number, wire type, value, raw bytes of the whole field)]."""
    out, i = [], 0
    while i < len(b):
        start = i
        key, i = _read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = _read_varint(b, i)
        elif wt == 1:
            val, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = _read_varint(b, i)
            val, i = b[i:i + n], i + n
        elif wt == 5:
            val, i = b[i:i + 4], i + 4
        else:
            raise KernelError(f"torch-xla HLO proto: unsupported wire type {wt} in field {num}")
        if i > len(b):
            raise KernelError("torch-xla HLO proto: truncated field")
        out.append((num, wt, val, b[start:i]))
    return out


def _len_field(num, payload):
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _packed(num, values):
    return _len_field(num, b"".join(_varint(v) for v in values)) if values else b""


def _aliasing_entry(output_shape_index, operand_index):
    body = _packed(1, list(output_shape_index))
    if operand_index:
        body += _varint(2 << 3 | 0) + _varint(operand_index)
    return _len_field(74, body)


# HloModuleProto.computations = 3; HloComputationProto.instructions = 2;
# HloInstructionProto: opcode = 2, custom_call_target = 28, output_operand_aliasing = 74.
def add_output_operand_aliasing(module_proto, target, entries):
    """module_proto with the aliasing entries [(output shape index, operand index)]
    written into its one custom-call to target (replacing any it had)."""
    found = []

    def instruction(ib):
        fs = _fields(ib)
        opcode = next((v for n, w, v, _ in fs if n == 2 and w == 2), b"")
        tgt = next((v for n, w, v, _ in fs if n == 28 and w == 2), b"")
        if opcode != b"custom-call" or tgt != target.encode():
            return ib
        found.append(1)
        kept = b"".join(raw for n, _, _, raw in fs if n != 74)
        return kept + b"".join(_aliasing_entry(o, p) for o, p in entries)

    def computation(cb):
        return b"".join(_len_field(2, instruction(v)) if n == 2 and w == 2 else raw for n, w, v, raw in _fields(cb))

    out = b"".join(_len_field(3, computation(v)) if n == 3 and w == 2 else raw for n, w, v, raw in _fields(bytes(module_proto)))
    if len(found) != 1:
        raise KernelError(f"torch-xla HLO proto: expected one custom-call to {target}, found {len(found)}")
    return out


# -- emission -------------------------------------------------------------------------

class _Staged:
    __slots__ = ("computation", "order", "name")

    def __init__(self, computation, order, name):
        self.computation, self.order, self.name = computation, order, name


_STAGED = OrderedDict()
_STAGED_MAX = 512
_STAGED_LOCK = threading.Lock()


def _hlo_type(dtype):
    dt = _dtypes.storage(_dtypes.canonical(dtype))
    code = _xla_dtypes.code_of(dt)
    return next(name for name, c in _xla_dtypes.HLO_NAMES.items() if c == code)


def _stage(name, config, operand_specs):
    """Build (once per configuration) the XlaComputation holding the custom-call."""
    import torch_xla  # noqa: F401
    from torch_xla import _XLAC

    aliases = tuple(sorted((int(k), int(v)) for k, v in dict(config.operand_output_aliases or {}).items()))
    return_types = tuple((tuple(int(s) for s in shape), np.dtype(_dtypes.storage(_dtypes.canonical(dt))))
                         for shape, dt in config.return_types)
    key = (name, config.backend_config, aliases, bool(config.has_collectives), tuple(operand_specs), return_types)
    with _STAGED_LOCK:
        hit = _STAGED.get(key)
        if hit is not None:
            _STAGED.move_to_end(key)
            return hit, return_types
    if not return_types:
        raise KernelError(f"{name}: the kernel config declares no outputs")
    n_out = len(return_types)
    for op, out in aliases:
        if not (0 <= op < len(operand_specs)) or not (0 <= out < n_out):
            raise KernelError(f"{name}: alias operand {op} -> output {out} is out of range "
                              f"({len(operand_specs)} operands, {n_out} outputs)")
        if tuple(operand_specs[op][0]) != return_types[out][0] or np.dtype(operand_specs[op][1]) != return_types[out][1]:
            raise KernelError(f"{name}: output {out} {return_types[out]} is aliased to operand {op} "
                              f"{operand_specs[op]} of another shape or dtype")
    placeholders = [_XLAC._xla_create_placeholder_tensor({"type": _hlo_type(dt), "sizes": tuple(shape)})
                    for shape, dt in operand_specs]
    attrs = {_HAS_COLLECTIVES_ATTR: "1"} if config.has_collectives else {}
    outs = _XLAC._xla_custom_call(placeholders, TARGET, [list(s) for s, _ in return_types],
                                  [torch_dtype_of(dt) for _, dt in return_types], False, config.backend_config,
                                  API_VERSION, attrs)
    # The captured module numbers its parameters in its own order (the reverse of
    # the operand list in torch-xla 2.9): map parameter i to its operand.
    ids, _ = _XLAC._get_tensors_xla_device_data_node(list(outs))
    pos = {_XLAC._xla_get_tensor_id(p): k for k, p in enumerate(placeholders)}
    try:
        order = tuple(pos[i] for i in ids)
    except KeyError:
        raise KernelError(f"{name}: torch-xla staged a parameter that is not a kernel operand") from None
    if sorted(order) != list(range(len(placeholders))):
        raise KernelError(f"{name}: torch-xla staged {len(order)} parameters for {len(placeholders)} operands")
    proto = _XLAC._get_xla_tensors_hlo_proto(list(outs))
    entries = [((out,) if n_out > 1 else (), op) for op, out in aliases]
    proto = add_output_operand_aliasing(proto, TARGET, entries)
    computation = _XLAC._xla_op_computation_from_module_proto(name, proto)
    # The lazy-IR op symbol needs a namespace.
    staged = _Staged(computation, order, "nki::" + name)
    with _STAGED_LOCK:
        _STAGED[key] = staged
        while len(_STAGED) > _STAGED_MAX:
            _STAGED.popitem(last=False)
    return staged, return_types


# Per call: the staged computation by (config identity, operand shapes and dtypes).
# The entry keeps the config alive, so its id cannot be reused while the entry lives.
_FAST = {}
_FAST_MAX = 4096
_XLAC = None


def emit(config, tensors, name="nki_kernel"):
    """The custom-call of config applied to XLA tensors (the kernel's operands,
    in config.input_names order); returns the list of output XLA tensors."""
    global _XLAC
    if _XLAC is None:
        from torch_xla import _XLAC
    tensors = list(tensors)
    if not tensors:
        raise KernelError(f"{name}: a torch-xla kernel call needs at least one XLA tensor operand")
    device = None
    for k, t in enumerate(tensors):
        if not is_torch_xla_tensor(t):
            raise KernelError(f"{name}: operand {k} is a {type(t).__name__} on {getattr(t, 'device', '?')}, not an XLA tensor")
        if device is None:
            device = t.device
        elif t.device != device:
            raise KernelError(f"{name}: operand {k} is on {t.device}, operand 0 on {device}")
        if t.dim() == 0:
            # kernels see a 0-d tensor as shape (1,) (serialize_dims says so too)
            tensors[k] = t.reshape(1)
    fast = (id(config), name, tuple([(t.shape, t.dtype) for t in tensors]))
    hit = _FAST.get(fast)
    if hit is None or hit[0] is not config:
        specs = []
        for t in tensors:
            shape, dt = map_torch_tensor(t)
            specs.append((shape, np.dtype(_dtypes.storage(dt))))
        staged, return_types = _stage(name, config, specs)
        hit = (config, staged, tuple((s, torch_dtype_of(d)) for s, d in return_types))
        with _STAGED_LOCK:
            if len(_FAST) >= _FAST_MAX:
                _FAST.clear()
            _FAST[fast] = hit
    _, staged, out_types = hit
    order = staged.order
    outs = _XLAC._xla_user_computation(staged.name, [tensors[k] for k in order], staged.computation)
    if len(outs) != len(out_types):
        raise KernelError(f"{name}: torch-xla returned {len(outs)} outputs for {len(out_types)} declared")
    for j, (o, (shape, tdt)) in enumerate(zip(outs, out_types)):
        if o.dtype != tdt or tuple(o.shape) != shape:
            raise KernelError(f"{name}: output {j} is {tuple(o.shape)} {o.dtype}, declared {shape} {tdt}")
    return list(outs)


class TorchXlaKernel(_Base):
    """A kernel on torch tensors: XLA tensors become the AwsNeuronNkiKernel
    custom-call, CPU tensors run in the simulator; the hooks map torch tensors
    and dtypes for dump_config."""

    framework_tensors_by_type = True

    def is_framework_tensor(self, t):
        return _is_torch_tensor(t)

    def map_framework_tensor(self, t):
        return tuple(int(s) for s in t.shape), t.dtype

    def translate_to_neuron_dtype(self, dtype):
        return translate_to_neuron_dtype(dtype)

    def call(self, config, tensors):
        """Emit the custom-call of config on the XLA tensors (config.input_names
        order); the declared outputs, a tuple when result_is_sequence."""
        outs = emit(config, tensors, name=_kernel_name(self))
        return _shape_result(config, outs)

    def __call__(self, *args, **kwargs):
        from ._trace import current

        tr = current()
        if tr is not None:
            return self._inline(tr, args, kwargs)
        vals = list(args) + list(kwargs.values())
        if any(is_torch_xla_tensor(v) for v in vals):
            return run_torch_xla(self, args, kwargs)
        if any(_is_torch_tensor(v) for v in vals):
            return run_torch_cpu(self, args, kwargs)
        return self.run_numpy(args, kwargs)


def _kernel_name(kernel):
    return getattr(kernel, "func_name", None) or getattr(getattr(kernel, "func", None), "__name__", None) or "nki_kernel"


def _shape_result(config, outs):
    if getattr(config, "result_is_sequence", False):
        return tuple(outs)
    if len(outs) == 1:
        return outs[0]
    return tuple(outs)


class _Slot:
    """Marks one call argument while the signature is bound once."""

    __slots__ = ("where",)

    def __init__(self, where):
        self.where = where


def _slots(kernel, config, nargs, kwnames):
    """For each of config.input_names, where the call passes it: an index into
    args or a keyword name; None when binding does not say (defaults)."""
    marks = [_Slot(i) for i in range(nargs)]
    kmarks = {k: _Slot(k) for k in kwnames}
    bound = _bind(kernel, tuple(marks), kmarks)
    out = []
    for pname in config.input_names:
        v = bound.arguments.get(pname)
        if not isinstance(v, _Slot):
            return None
        out.append(v.where)
    return tuple(out)


def _bind(kernel, args, kwargs):
    if hasattr(kernel, "bind"):
        return kernel.bind(args, kwargs)
    import inspect

    bound = inspect.signature(kernel.func).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


def _operands(kernel, config, args, kwargs):
    """The kernel's tensor operands, in config.input_names order, from its call arguments."""
    cache = kernel.__dict__.setdefault("_torch_operand_slots", {})
    key = (id(config), len(args), tuple(kwargs))
    hit = cache.get(key)
    if hit is None or hit[0] is not config:
        if len(cache) > 256:
            cache.clear()
        hit = cache[key] = (config, _slots(kernel, config, len(args), tuple(kwargs)))
    slots = hit[1]
    if slots is not None:
        return [args[w] if type(w) is int else kwargs[w] for w in slots]
    bound = _bind(kernel, args, kwargs)
    tensors = []
    for pname in config.input_names:
        if pname not in bound.arguments:
            raise KernelError(f"kernel config names input {pname!r}, which is not an argument of the call")
        tensors.append(bound.arguments[pname])
    return tensors


def run_torch_xla(kernel, args, kwargs):
    """Call kernel (anything offering dump_config) on torch-xla tensors: the
    outputs are lazy XLA tensors computed by the AwsNeuronNkiKernel custom-call.
    Old-style kernels (outputs passed as arguments) update those argument
    tensors and return None."""
    config = kernel.dump_config(*args, **kwargs)
    tensors = _operands(kernel, config, args, kwargs)
    name = _kernel_name(kernel)
    for pname, t in zip(config.input_names, tensors):
        if not is_torch_xla_tensor(t):
            raise KernelError(f"{name}: argument {pname!r} is not an XLA tensor; a torch-xla kernel call takes every "
                              "tensor argument on the XLA device")
    outs = emit(config, tensors, name=name)
    if not getattr(config, "kernel_return", True):
        # Old style: write each output into the argument buffer it aliases.
        by_out = {int(o): int(p) for p, o in dict(config.operand_output_aliases or {}).items()}
        for j, o in enumerate(outs):
            if j not in by_out:
                raise KernelError(f"{name}: output {j} of an old-style kernel aliases no argument")
            tensors[by_out[j]].copy_(o)
        return None
    return _shape_result(config, outs)
