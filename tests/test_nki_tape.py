"""The tracer streams events to Go in Python's marshal format; the JSON tape
carries the same events. Both must build the same kernel, byte for byte, for
every feature the tape encodes (loops, masks, program ids, dynamic indices,
constants, attributes of every kind, placements, non-ASCII names)."""

import marshal
import os

import ml_dtypes
import numpy as np
import pytest

import nki_kernels as K
from goldtrace import nki
from goldtrace.nki import _trace
from goldtrace.nki._sym import TILE_AXIS
import goldtrace.nki.isa as nisa
import goldtrace.nki.language as nl

RNG = np.random.default_rng(3)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _attr_kinds(x):
    """Attributes of every kind: strings, bools, ints, floats (NaN, inf,
    negative zero, an integral float), lists, and a big integer constant."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    a = nisa.tensor_scalar(t, np.multiply, float("inf"), op1=np.add, operand1=-0.0)
    b = nl.maximum(a, float("nan"))
    c = nl.add(b, 2.0 ** 40)
    d = nl.add(c, 3)
    e = nl.where(nl.greater(d, 0.0), d, -1e300)
    nl.store(out, value=nisa.activation(nl.exp, e, scale=2.0, bias=None))
    return out


def _constants_and_iota(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:64]
    idx = nisa.iota(ip * 64 + jf - 2 ** 33 // 2 ** 30, dtype=nl.int32)
    t = nl.load(x)
    nl.store(out, value=nl.add(t, idx, dtype=nl.float32), mask=(ip < 100) & (jf >= 3))
    return out


def _unicode_names(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="résultat_Δ")
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, name="tuile_😀")
    t[...] = nl.load(x)
    nl.store(out, value=nl.multiply(t, 0.5))
    return out


def _many_events(x):
    """Several batches, shared operand tiles (marshal back-references)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    acc = t
    for i in range(300):
        acc = nl.add(acc, t) if i % 3 else nl.multiply(acc, float(i) / 7.0)
    nl.store(out, value=acc)
    return out


def _slices(x):
    """Integer slices of every form the fast indexing path takes (negative,
    open, single elements, size-1 dimensions) and ones it leaves to the
    general path (steps, loop variables)."""
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.load(x[0:128, :])
    b = nl.load(x[-128:, 0:64])
    c = nl.load(x[128:256, -64:])
    d = nl.load(x[1:2, :]).broadcast_to((128, 64))
    e = nl.load(x[0:256:2, 0:64])
    f = nl.load(x[5:6, 3:4])
    acc = nl.add(nl.add(a, b), nl.add(c, nl.add(d, nl.add(e, f))))
    for i in nl.affine_range(2):
        acc = nl.add(acc, nl.load(x[i * 128:(i + 1) * 128, :]))
    nl.store(out[0:128, 0:64], value=nl.copy(acc))
    row = nl.ndarray((64,), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(row, value=nl.load(x[-3, 0:64]))
    return out, row


def _isa_ops(x, w):
    """The nisa instructions with a one-call result path, with engines,
    PSUM results, numpy scalars and tile operands."""
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    wt = nl.load(w)
    a = nisa.activation(nl.tanh, t, scale=np.float32(0.5), bias=nisa.tensor_reduce(np.add, t, axis=1, keepdims=True))
    b = nisa.tensor_scalar(a, np.multiply, np.float64(1.5), op1=np.subtract, operand1=0.25, engine=nisa.vector_engine)
    c = nisa.tensor_tensor(b, t, np.maximum, engine=nisa.gpsimd_engine)
    d = nisa.tensor_copy(c, dtype=nl.bfloat16)
    p = nisa.nc_matmul(d, wt)
    nl.store(out, value=nisa.tensor_copy(p))
    return out


CASES = {
    "add_spmd": (K.add_spmd, (2, 2), (rand(256, 1024), rand(256, 1024)), {}),
    "add_masked": (K.add_masked, None, (rand(200, 300), rand(200, 300)), {}),
    "matmul_tiled": (K.matmul_tiled, None, (rand(256, 128), rand(256, 512)), {}),
    "softmax_rows": (K.softmax_rows, None, (rand(256, 64),), {}),
    "layernorm_bn": (K.layernorm_bn, None, (rand(128, 256), rand(1, 256), rand(1, 256)), {}),
    "attention": (K.attention, None, (rand(64, 128), rand(64, 128), rand(128, 64)), {}),
    "causal_mask_fill": (K.causal_mask_fill, None, (rand(128, 128),), {}),
    "cumsum_scan": (K.cumsum_scan, None, (rand(128, 256),), {}),
    "selective_scan": (K.selective_scan, None,
                       (rand(1, 128, 64), rand(1, 128, 64), rand(128, 4), rand(1, 4, 64), rand(1, 4, 64)), {}),
    "flash_attention": (K.flash_attention, (1, 2), (rand(1, 2, 64, 256), rand(1, 2, 64, 256), rand(1, 2, 256, 64)),
                        {"causal": True}),
    "attr_kinds": (nki.jit(_attr_kinds), None, (rand(128, 64),), {}),
    "constants_and_iota": (nki.jit(_constants_and_iota), None, (rand(128, 64),), {}),
    "unicode_names": (nki.jit(_unicode_names), None, (rand(128, 64).astype(ml_dtypes.bfloat16),), {}),
    "many_events": (nki.jit(_many_events), None, (rand(128, 64),), {}),
    "slices": (nki.jit(_slices), None, (rand(256, 64),), {}),
    "isa_ops": (nki.jit(_isa_ops), None, (rand(128, 64), rand(128, 128).astype(ml_dtypes.bfloat16)), {}),
}


def _config(kernel, grid, args, kwargs):
    k = nki.UnifiedKernel(func=kernel.func)
    if grid is not None:
        k = k[grid]
    return k.dump_config(*args, **kwargs).backend_config


@pytest.mark.parametrize("name", sorted(CASES))
def test_marshal_and_json_tapes_build_the_same_kernel(name, monkeypatch):
    kernel, grid, args, kwargs = CASES[name]
    monkeypatch.setattr(_trace, "_TAPE_FORMAT", "marshal")
    via_marshal = _config(kernel, grid, args, kwargs)
    monkeypatch.setattr(_trace, "_TAPE_FORMAT", "json")
    via_json = _config(kernel, grid, args, kwargs)
    assert via_marshal == via_json


def test_the_tracer_really_sends_marshal(monkeypatch):
    """The fast form is the one in use, and every batch of a long kernel is marshal."""
    calls = {"marshal": 0, "json": 0}
    real = _trace._bridge.lib

    class Counting:
        def __getattr__(self, attr):
            if attr == "gt_kb_append_marshal":
                calls["marshal"] += 1
            elif attr == "gt_kb_append":
                calls["json"] += 1
            return getattr(real, attr)

    monkeypatch.setattr(_trace._bridge, "lib", Counting())
    kernel, grid, args, kwargs = CASES["many_events"]
    _config(kernel, grid, args, kwargs)
    assert calls["marshal"] >= 5 and calls["json"] == 0


def test_a_batch_marshal_refuses_goes_as_json(monkeypatch):
    """marshal takes only exact ints, floats and strs; a batch it refuses
    (ValueError) is sent as JSON and builds the same kernel."""
    kernel, grid, args, kwargs = CASES["many_events"]
    want = _config(kernel, grid, args, kwargs)
    calls = []
    real = _trace._bridge.lib

    class Counting:
        def __getattr__(self, attr):
            calls.append(attr)
            return getattr(real, attr)

    def refuse(obj, version):
        raise ValueError("unmarshallable object")

    monkeypatch.setattr(_trace._bridge, "lib", Counting())
    monkeypatch.setattr(_trace.marshal, "dumps", refuse)
    assert _config(kernel, grid, args, kwargs) == want
    assert "gt_kb_append" in calls and "gt_kb_append_marshal" not in calls


def test_marshal_back_references_decode():
    """A batch whose shared objects marshal writes once and then refers back
    to (the same list, tuple and string several times) builds what the JSON
    tape of the same events builds."""
    shape = (128, 64)
    name = "shared"
    events = [
        [0, name, "SHARED_HBM", "PARAM", shape, 11, 0, 0, 1],
        [0, "o", "SHARED_HBM", "OUTPUT", shape, 11, 0, 0, 2],
        [0, "s", "SBUF", "TEMP", shape, 11, 0, 0, 3],
    ]
    acc = [2, shape, [[0, TILE_AXIS, 0, 1], [0, TILE_AXIS, 1, 1]]]
    events += [[1, "dma", 0, 4, [acc], [0], None], [1, "tensor_scalar", 0, 5, [acc], [acc],
               {"op0": "add", "scalar0": 1.5, "reverse0": False}], [1, "dma", 0, 6, [1], [acc], None]]
    data = marshal.dumps(events, 4)
    assert b"r" in data  # back-references are really in there
    ir_m = _build(events, marshal_form=True)
    ir_j = _build(events, marshal_form=False)
    assert ir_m == ir_j


def _build(events, marshal_form):
    import json

    from goldtrace import _bridge

    lib, ffi = _bridge.lib, _bridge.ffi
    h = ffi.new("uint64_t *")
    _bridge.call(lib.gt_kb_new, b"k", h)
    try:
        if marshal_form:
            data = marshal.dumps(events, 4)
            _bridge.call(lib.gt_kb_append_marshal, h[0], data, len(data))
        else:
            data = json.dumps(events).encode()
            _bridge.call(lib.gt_kb_append, h[0], data, len(data))
        sig = {"grid": [1], "inputs": [0], "outputs": [1], "files": ["k.py"], "num_cores": 1, "core_grid_dim": -1,
               "options": {}, "mutable": []}
        k = ffi.new("uint64_t *")
        _bridge.call(lib.gt_kb_finish, h[0], json.dumps(sig).encode(), k)
        data_p, n = ffi.new("void **"), ffi.new("int64_t *")
        _bridge.call(lib.gt_kernel_serialize, k[0], data_p, n)
        out = bytes(ffi.buffer(data_p[0], n[0]))
        lib.gt_free(data_p[0])
        lib.gt_handle_free(k[0])
        return out
    finally:
        lib.gt_handle_free(h[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_tracer_fast_paths_build_what_the_general_paths_build(name, monkeypatch):
    """Trace.result_inst and the whole-tensor slicing path are shortcuts of
    _result + emit and of index(): the kernels must not change."""
    from goldtrace.nki import language as nl_impl

    kernel, grid, args, kwargs = CASES[name]
    fast = _config(kernel, grid, args, kwargs)

    # Compiled as if it were goldtrace's own code, so that source locations
    # (the innermost frame outside goldtrace) stay the kernel's.
    src = (
        "def general_result_inst(self, op, shape, dtype, src, attrs, domain=None, memory='SBUF', engine='', plain=True):\n"
        "    out = nl_impl._result(shape, dtype, nl_impl.psum if memory == 'PSUM' else None)\n"
        "    self.emit(op, [out.tile()], list(src), attrs, domain=domain, engine=engine)\n"
        "    return out\n"
    )
    ns = {"nl_impl": nl_impl}
    exec(compile(src, os.path.join(os.path.dirname(_trace.__file__), "_general_paths.py"), "exec"), ns)
    monkeypatch.setattr(_trace.Trace, "result_inst", ns["general_result_inst"])
    monkeypatch.setattr(_trace, "_index_whole_basic", lambda t, key: None)
    assert _config(kernel, grid, args, kwargs) == fast
