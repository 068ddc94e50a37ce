"""Kernels inside jax.jit on CPU (the typed-FFI handler in libgoldtrace) and
inside goldens of the exported HLO, checked against numpy and against each
other; the handler's C ABI (metadata handshake, stages, error trampoline)
driven directly through ctypes."""

import ctypes

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import goldtrace
from goldtrace import nki
import goldtrace.nki.language as nl
from goldtrace.nki import _jax_ffi


@pytest.fixture(autouse=True)
def _target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")


from nki_kernels import _accumulate, _add, _pair  # noqa: E402  (undecorated bodies shared by the kernel tests)


def _inputs(rng, shape=(128, 64)):
    return rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)


def test_ensure_registered_is_idempotent_and_thread_safe():
    import threading

    got = []
    threads = [threading.Thread(target=lambda: got.append(_jax_ffi.ensure_registered())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [_jax_ffi.TARGET] * 8
    assert _jax_ffi.ensure_registered() == "goldtrace_nki_kernel"


def test_hand_made_ffi_call_inside_jit_matches_numpy(rng):
    x, y = _inputs(rng)
    cfg = nki.jit(_add).dump_config(x, y).backend_config
    _jax_ffi.ensure_registered()
    call = jax.ffi.ffi_call(_jax_ffi.TARGET, jax.ShapeDtypeStruct(x.shape, jnp.float32))
    f = jax.jit(lambda a, b: call(a, b, kernel=cfg) * 2.0 - b)
    text = f.lower(x, y).as_text(dialect="hlo")
    assert 'custom_call_target="goldtrace_nki_kernel"' in text and "API_VERSION_TYPED_FFI" in text
    np.testing.assert_array_equal(np.asarray(f(x, y)), (x + y) * np.float32(2) - y)
    # Called again with new values: the same compiled program, the cached kernel.
    x2, y2 = _inputs(rng)
    np.testing.assert_array_equal(np.asarray(f(x2, y2)), (x2 + y2) * np.float32(2) - y2)


def test_kernel_calls_inside_jit_on_cpu_use_the_handler(rng):
    x, y = _inputs(rng)
    add, pair, acc = nki.jit(_add), nki.jit(_pair), nki.jit(_accumulate)

    def f(a, b):
        s, p = pair(a, 3.0)
        return add(s, b), p, acc(b, a)

    jf = jax.jit(f)
    assert "goldtrace_nki_kernel" in jf.lower(x, y).as_text(dialect="hlo")
    got = [np.asarray(v) for v in jf(x, y)]
    np.testing.assert_array_equal(got[0], x * np.float32(3) + y)
    np.testing.assert_allclose(got[1], np.exp(x), rtol=2e-7, atol=0)
    np.testing.assert_array_equal(got[2], y + x)
    # The simulator on the same arrays gives the same bits.
    np.testing.assert_array_equal(got[1], pair(x, 3.0)[1])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int32"])
def test_kernel_dtypes_through_the_handler(rng, dtype):
    import ml_dtypes  # noqa: F401  (numpy knows bfloat16 through it)

    dt = np.dtype(dtype)
    x = (rng.standard_normal((128, 64)) * 8).astype(dt)
    y = (rng.standard_normal((128, 64)) * 8).astype(dt)
    add = nki.jit(_add)
    got = np.asarray(jax.jit(lambda a, b: add(a, b))(x, y))
    assert got.dtype == dt
    # The engines compute in float32 and round to the destination dtype.
    want = (x.astype(np.float32) + y.astype(np.float32)).astype(dt)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, add(x, y))


def test_handler_errors_reach_jax_with_the_kernel_and_the_problem(rng):
    x, y = _inputs(rng, (16, 8))
    cfg = nki.jit(_add).dump_config(x, y).backend_config
    _jax_ffi.ensure_registered()
    out = jax.ShapeDtypeStruct(x.shape, jnp.float32)
    with pytest.raises(Exception, match=r'goldtrace_nki_kernel: kernel "_add": takes 2 operands \(its parameters\), got 1'):
        jax.jit(lambda a: jax.ffi.ffi_call(_jax_ffi.TARGET, out)(a, kernel=cfg))(x).block_until_ready()
    with pytest.raises(Exception, match=r"result 0 is f32\[8,16\] but kernel output 0"):
        wrong = jax.ShapeDtypeStruct((8, 16), jnp.float32)
        jax.jit(lambda a, b: jax.ffi.ffi_call(_jax_ffi.TARGET, wrong)(a, b, kernel=cfg))(x, y).block_until_ready()
    with pytest.raises(Exception, match="no string attribute 'kernel'"):
        jax.jit(lambda a, b: jax.ffi.ffi_call(_jax_ffi.TARGET, out)(a, b))(x, y).block_until_ready()
    with pytest.raises(Exception, match="attribute 'kernel' must be a string"):
        jax.jit(lambda a, b: jax.ffi.ffi_call(_jax_ffi.TARGET, out)(a, b, kernel=np.int64(3)))(x, y).block_until_ready()
    with pytest.raises(Exception, match="cannot read the kernel's backend_config: backend_config: bad base64"):
        jax.jit(lambda a, b: jax.ffi.ffi_call(_jax_ffi.TARGET, out)(a, b, kernel="not base64!"))(x, y).block_until_ready()


def test_goldens_of_the_exported_hlo_match_jit(rng):
    """The same function four ways: jax.jit on CPU (kernels through the FFI
    handler), goldens of its Neuron-form HLO as text and as proto, goldens of
    its CPU-form HLO (typed-FFI dictionary backend_config: text, proto, and
    XLA's optimized module), and numpy."""
    x, y = _inputs(rng)
    add, pair, acc = nki.jit(_add), nki.jit(_pair), nki.jit(_accumulate)

    def f(a, b):
        s, p = pair(a, 0.5)
        return jnp.maximum(add(s, b), 0.0), acc(b, p) * 2.0

    jit_out = [np.asarray(v) for v in jax.jit(f)(x, y)]
    np.testing.assert_array_equal(jit_out[0], np.maximum(x * np.float32(0.5) + y, 0))
    # exp is the simulator's (within an ulp of numpy's); the rest is exact.
    e = pair(x, 0.5)[1]
    np.testing.assert_allclose(e, np.exp(x), rtol=2.5e-7, atol=0)
    np.testing.assert_array_equal(jit_out[1], (y + e) * np.float32(2))

    with nki.lowering("neuron"):
        # A fresh function: jax.jit reuses the trace of one it has seen, and
        # the lowering mode is chosen at trace time.
        lowered = jax.jit(lambda a, b: f(a, b)).lower(x, y)
    text = lowered.as_text(dialect="hlo")
    assert 'custom_call_target="AwsNeuronCustomNativeKernel"' in text and "goldtrace_nki_kernel" not in text
    assert "output_to_operand_aliasing" in text
    proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    cpu = jax.jit(f).lower(x, y)
    cpu_text = cpu.as_text(dialect="hlo")
    assert "backend_config={kernel = " in cpu_text
    cpu_proto = cpu.compiler_ir("hlo").as_serialized_hlo_module_proto()
    cpu_optimized = cpu.compile().as_text()  # after XLA:CPU's passes
    assert 'custom_call_target="goldtrace_nki_kernel"' in cpu_optimized
    for what, module in [("neuron text", text), ("neuron proto", proto), ("cpu text", cpu_text),
                         ("cpu proto", cpu_proto), ("cpu optimized", cpu_optimized)]:
        g = goldtrace.golden(module, x, y)
        assert len(g) == 2, what
        for i in range(2):
            np.testing.assert_array_equal(g[i], jit_out[i], err_msg=f"{what}: output {i}")


def test_golden_refuses_a_config_it_cannot_read(rng):
    import base64
    import json

    x, y = _inputs(rng, (16, 8))
    with nki.lowering("neuron"):
        text = jax.jit(lambda a, b: nki.jit(_add)(a, b)).lower(x, y).as_text(dialect="hlo")
    cfg = text.split('backend_config="', 1)[1].split('"', 1)[0]
    raw = json.loads(base64.b64decode(cfg))
    raw["kernel_version"] = 99
    newer = text.replace(cfg, base64.b64encode(json.dumps(raw).encode()).decode())
    with pytest.raises(goldtrace.GoldtraceError, match=r"kernel_version 99 is newer") as e:
        goldtrace.golden(newer, x, y)
    assert "not supported" in str(e.value)


def _allsum(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    ip, jf = nl.mgrid[0:128, 0:64]
    s = nl.all_reduce(nl.load(a[i * 128 + ip, jf]), op=np.add)
    nl.store(out[i * 128 + ip, jf], value=s)
    return out


def test_collectives_across_program_instances_inside_jit_and_goldens(rng):
    x = rng.standard_normal((256, 64)).astype(np.float32)
    want = np.tile(x[:128] + x[128:], (2, 1))
    k = nki.jit(_allsum)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: k[2](a))(x)), want)
    with nki.lowering("neuron"):
        text = jax.jit(lambda a: k[2](a)).lower(x).as_text(dialect="hlo")
    np.testing.assert_array_equal(goldtrace.golden(text, x)[0], want)
    # Across emulated devices each device runs its own launch: nl.all_reduce
    # reduces the program instances of that launch only.
    two = text.replace("HloModule ", "HloModule two_devices_", 1).replace(", entry_computation_layout", ", replica_count=2, entry_computation_layout", 1)
    assert "replica_count=2" in two
    y = rng.standard_normal((256, 64)).astype(np.float32)
    out = goldtrace.golden(two, x, y, emulate_devices=2)
    np.testing.assert_array_equal(out.per_device[0][0], want)
    np.testing.assert_array_equal(out.per_device[1][0], np.tile(y[:128] + y[128:], (2, 1)))


def test_jitted_kernels_from_many_threads(rng):
    import threading

    add = nki.jit(_add)
    f = jax.jit(lambda a, b: add(a, b) * 3.0)
    inputs = [_inputs(rng, (128, 64)) for _ in range(4)]
    f(*inputs[0]).block_until_ready()
    errors = []

    def work(x, y):
        try:
            for _ in range(10):
                np.testing.assert_array_equal(np.asarray(f(x, y)), (x + y) * np.float32(3))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=xy) for xy in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ---- the C ABI of the handler, without XLA ----

class _ExtBase(ctypes.Structure):
    pass


_ExtBase._fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int), ("next", ctypes.POINTER(_ExtBase))]


class _ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class _Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", _ApiVersion), ("traits", ctypes.c_uint32)]


class _MetadataExt(ctypes.Structure):
    _fields_ = [("extension_base", _ExtBase), ("metadata", ctypes.POINTER(_Metadata))]


class _ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("message", ctypes.c_char_p), ("errc", ctypes.c_int)]


_ERROR_CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ErrorCreateArgs))


class _Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api_version", _ApiVersion), ("internal_api", ctypes.c_void_p), ("error_create", _ERROR_CREATE)]


class _Span(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_char_p), ("len", ctypes.c_size_t)]


class _List(ctypes.Structure):  # XLA_FFI_Args / XLA_FFI_Rets
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(ctypes.c_int)), ("items", ctypes.POINTER(ctypes.c_void_p))]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(ctypes.c_int)), ("names", ctypes.POINTER(ctypes.POINTER(_Span))),
                ("attrs", ctypes.POINTER(ctypes.c_void_p))]


class _Frame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.POINTER(_ExtBase)),
                ("api", ctypes.POINTER(_Api)), ("ctx", ctypes.c_void_p), ("stage", ctypes.c_int),
                ("args", _List), ("rets", _List), ("attrs", _Attrs)]


def _handler():
    fn = _jax_ffi.handler()
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.POINTER(_Frame)]
    return fn


def test_c_handler_answers_the_metadata_handshake():
    md = _Metadata(struct_size=ctypes.sizeof(_Metadata), api_version=_ApiVersion(struct_size=ctypes.sizeof(_ApiVersion)), traits=77)
    ext = _MetadataExt(extension_base=_ExtBase(struct_size=ctypes.sizeof(_MetadataExt), type=1), metadata=ctypes.pointer(md))
    frame = _Frame(struct_size=ctypes.sizeof(_Frame), extension_start=ctypes.cast(ctypes.pointer(ext), ctypes.POINTER(_ExtBase)))
    assert _handler()(ctypes.byref(frame)) is None
    assert (md.api_version.major_version, md.api_version.minor_version, md.traits) == (0, 1, 0)


def test_c_handler_reports_errors_through_the_api_and_skips_other_stages():
    created = []

    @_ERROR_CREATE
    def error_create(args):
        created.append((args.contents.message.decode(), args.contents.errc, args.contents.struct_size))
        return 0xE0

    api = _Api(struct_size=ctypes.sizeof(_Api), error_create=error_create)
    name, value = _Span(b"kernel", 6), _Span(b"garbage", 7)
    names = (ctypes.POINTER(_Span) * 1)(ctypes.pointer(name))
    attrs = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(value), ctypes.c_void_p))
    types = (ctypes.c_int * 1)(4)  # STRING
    frame = _Frame(struct_size=ctypes.sizeof(_Frame), api=ctypes.pointer(api),
                   attrs=_Attrs(size=1, types=types, names=names, attrs=attrs))
    for stage in (0, 1, 2):  # instantiate, prepare, initialize: nothing to do
        frame.stage = stage
        assert _handler()(ctypes.byref(frame)) is None
    assert created == []
    frame.stage = 3
    assert _handler()(ctypes.byref(frame)) == 0xE0
    msg, errc, size = created[0]
    assert "goldtrace_nki_kernel: cannot read the kernel's backend_config: backend_config: bad base64" in msg
    # XLA_FFI_STRUCT_SIZE: up to the end of the last field, no tail padding.
    assert errc == 3 and size == _ErrorCreateArgs.errc.offset + ctypes.sizeof(ctypes.c_int)
    types[0] = 3  # a scalar, not a string
    assert _handler()(ctypes.byref(frame)) == 0xE0
    assert "attribute 'kernel' must be a string" in created[1][0]
