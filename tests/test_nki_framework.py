"""FrameworkKernel: dump_config, the backend_config, the specialization cache,
the platform target, and the JAX bridge (Neuron and CPU lowerings)."""

import base64
import json
import threading
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import goldtrace
from goldtrace import nki
import goldtrace.nki.isa as nisa
import goldtrace.nki.language as nl
from goldtrace.nki import _platform

KEYS = {"kernel_version", "func_name", "grid", "has_collectives", "matmul_mac_count", "platform_target",
        "platform_target_is_fallback", "opts", "serialize_dims", "serialize_ir_string", "tiled", "constant_values",
        "kernel_return", "result_is_sequence"}


@pytest.fixture(autouse=True)
def _target(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")


from nki_kernels import _accumulate, _add, _pair  # noqa: E402  (undecorated bodies shared by the kernel tests)


def _mm(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // 512):
        acc = nl.zeros((M, 512), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // 128):
            acc += nisa.nc_matmul(nl.load(lhsT[k * 128:(k + 1) * 128, :]), nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]))
        nl.store(out[:, n * 512:(n + 1) * 512], value=nl.copy(acc))
    return out


X = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 1000


def test_dump_config_fields_and_the_14_keys():
    k = nki.jit(_add)
    cfg = k.dump_config(X, X)
    assert isinstance(cfg, nki.KernelConfig)
    assert cfg.input_names == ("a", "b")
    assert len(cfg.output_names) == 1
    assert cfg.return_types == (((128, 64), np.dtype(np.float32)),)
    assert cfg.operand_output_aliases == {}
    assert cfg.kernel_return and not cfg.result_is_sequence and not cfg.has_collectives
    raw = json.loads(base64.b64decode(cfg.backend_config))
    assert set(raw) == KEYS
    assert raw["func_name"] == "_add" and raw["platform_target"] == "trn2" and raw["platform_target_is_fallback"] is False
    decoded = nki.decode_backend_config(cfg.backend_config)
    assert set(decoded) == KEYS
    assert "tensor_tensor" in decoded["serialize_ir_string"]


def test_config_ir_rebuilds_and_simulates_to_the_same_numbers():
    k = nki.jit(_pair)
    cfg = k.dump_config(X, 3.0)
    assert cfg.result_is_sequence and cfg.constant_values == {"scale": 3.0}
    s, p = nki.simulate_backend_config(cfg.backend_config, X)
    np.testing.assert_array_equal(s, X * np.float32(3.0))
    np.testing.assert_allclose(p, np.exp(X), rtol=2e-7)
    s2, p2 = k(X, 3.0)
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(p, p2)


def test_matmul_mac_count_sums_over_loops():
    cfg = nki.jit(_mm).dump_config(np.ones((256, 128), np.float32), np.ones((256, 1024), np.float32))
    raw = json.loads(base64.b64decode(cfg.backend_config))
    assert raw["matmul_mac_count"] == 128 * 1024 * 256


def test_cache_hit_returns_the_identical_object_and_traces_nothing():
    calls = []

    def body(a, b):
        calls.append(1)
        return _add(a, b)

    k = nki.jit(body)
    c1 = k.dump_config(X, X)
    c2 = k.dump_config(X, X)
    c3 = k.dump_config(jax.ShapeDtypeStruct((128, 64), jnp.float32), jax.ShapeDtypeStruct((128, 64), jnp.float32))
    assert c1 is c2 is c3
    assert len(calls) == 1
    cache = getattr(k, "__neuron_kernel_interface_kernel_cache__")
    assert len(cache) == 1 and next(iter(cache.values())) is c1
    c4 = k.dump_config(X.astype(ml_dtypes.bfloat16), X.astype(ml_dtypes.bfloat16))
    assert c4 is not c1 and len(calls) == 2


def test_constants_enter_the_key_by_type_and_value():
    k = nki.jit(_pair)
    a = k.dump_config(X, 2)
    b = k.dump_config(X, 2.0)
    c = k.dump_config(X, 2.0)
    assert a is not b and b is c


def test_numpy_scalar_constants_are_keyed_by_value_on_the_fast_path():
    # A numpy scalar has a shape and a dtype but is a constant, not a tensor:
    # np.float32(2) and np.float32(3) are two specializations, on every call.
    k = nki.jit(_pair)
    for _ in range(3):
        two, three = k.dump_config(X, np.float32(2.0)), k.dump_config(X, np.float32(3.0))
        assert two is not three
        assert two.constant_values == {"scale": np.float32(2.0)}
        assert three.constant_values == {"scale": np.float32(3.0)}
    s, _ = nki.simulate_backend_config(three.backend_config, X)
    np.testing.assert_array_equal(s, X * np.float32(3.0))


def test_a_value_dependent_tensor_hook_never_gets_a_stale_hit():
    # An integrator whose is_framework_tensor looks at the object, not its
    # type: the fast key must not assume one answer per type.
    class Box:
        def __init__(self, arr, as_tensor):
            self.arr, self.as_tensor = arr, as_tensor
            self.shape, self.dtype = arr.shape, arr.dtype

        def __hash__(self):
            return hash(float(self.arr.flat[0]))

        def __eq__(self, other):
            return isinstance(other, Box) and float(self.arr.flat[0]) == float(other.arr.flat[0])

    class BoxKernel(nki.FrameworkKernel):
        def is_framework_tensor(self, t):
            return isinstance(t, np.ndarray) or (isinstance(t, Box) and t.as_tensor)

        def map_framework_tensor(self, t):
            return t.shape, t.dtype

    def body(a, b):
        src = b if isinstance(a, Box) else a  # a Box constant arrives as itself
        out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(src), 2.0))
        return out

    k = BoxKernel(func=body)
    tensor = k.dump_config(Box(X, True), X)
    again = k.dump_config(Box(X, True), X)
    assert tensor is again and tensor.input_names == ("a", "b")
    const = k.dump_config(Box(X, False), X)
    assert const is not tensor and const.input_names == ("b",)
    assert k.dump_config(Box(X, True), X) is tensor
    assert k.dump_config(Box(X, False), X) is const


def test_unhashable_constant_names_the_argument():
    k = nki.jit(_pair)
    with pytest.raises(goldtrace.InvalidArgumentError, match="scale"):
        k.dump_config(X, [2.0])


def test_lru_cache_size_evicts_with_one_warning():
    k = nki.FrameworkKernel.__subclasses__  # the class exists
    k = nki.UnifiedKernel(func=_pair, cache_size=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfgs = [k.dump_config(X, float(i)) for i in range(4)]
        k.dump_config(X, 9.0)
    evict = [x for x in w if "evict" in str(x.message)]
    assert len(evict) == 1
    assert len(getattr(k, "__neuron_kernel_interface_kernel_cache__")) == 2
    assert k.dump_config(X, 9.0) is not cfgs[0]


def test_cache_is_thread_safe():
    k = nki.jit(_add)
    out = []

    def worker():
        for _ in range(20):
            out.append(k.dump_config(X, X))

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len({id(c) for c in out}) == 1


def test_enable_cache_false_traces_every_time():
    calls = []

    def body(a, b):
        calls.append(1)
        return _add(a, b)

    k = nki.UnifiedKernel(func=body, enable_cache=False)
    k.dump_config(X, X)
    k.dump_config(X, X)
    assert len(calls) == 2


def test_fallback_warning_fires_once_and_changes_the_key(monkeypatch):
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE")
    monkeypatch.setattr(_platform, "_cached", None)
    monkeypatch.setattr(_platform, "_read_product_name", lambda: None)
    k = nki.jit(_add)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c1 = k.dump_config(X, X)
        k2 = nki.jit(_add)
        k2.dump_config(X, X)
    msgs = [str(x.message) for x in w if "MLA target" in str(x.message)]
    assert msgs == ["Unable to read MLA target. Assuming cross compile to trn1."]
    assert c1.cache_key[-1] is True
    raw = json.loads(base64.b64decode(c1.backend_config))
    assert raw["platform_target"] == "trn1" and raw["platform_target_is_fallback"] is True
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    c2 = k.dump_config(X, X)
    assert c2 is not c1 and c2.cache_key[-1] is False


def test_multi_core_grid_needs_a_multi_core_target(monkeypatch):
    def body(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        nl.store(out[i * 64:(i + 1) * 64, :], value=nl.add(nl.load(a[i * 64:(i + 1) * 64, :]), nl.load(b[i * 64:(i + 1) * 64, :])))
        return out

    k = nki.jit(body)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    with pytest.raises(nki.KernelError, match="physical cores"):
        k[nl.nc(2)].dump_config(X, X)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    cfg = k[nl.nc(2)].dump_config(X, X)
    assert json.loads(base64.b64decode(cfg.backend_config))["grid"] == [2]
    np.testing.assert_array_equal(k[nl.nc(2)](X, X), X + X)


def test_aliases_for_an_output_written_into_an_input():
    k = nki.jit(_accumulate)
    cfg = k.dump_config(X, X)
    assert cfg.operand_output_aliases == {0: 0}
    assert cfg.output_names == ("acc",)


def test_decoder_refuses_a_newer_kernel_version():
    cfg = nki.jit(_add).dump_config(X, X)
    raw = json.loads(base64.b64decode(cfg.backend_config))
    raw["kernel_version"] = 99
    s = base64.b64encode(json.dumps(raw).encode()).decode()
    with pytest.raises(goldtrace.UnsupportedError, match="kernel_version"):
        nki.decode_backend_config(s)


def test_decoder_refuses_a_foreign_config():
    foreign = base64.b64encode(json.dumps({"kernel_version": 1, "klir_binary": {"binary": "/tmp/x.klir"}, "func_name": "f",
                                           "grid": [], "has_collectives": False}).encode()).decode()
    with pytest.raises(goldtrace.GoldtraceError):
        nki.decode_backend_config(foreign)


# ---- JAX ----


def test_neuron_lowering_emits_the_custom_call():
    k = nki.jit(_accumulate)
    with nki.lowering("neuron"):
        text = jax.jit(lambda a, b: k(a, b) * 2).lower(X, X).as_text(dialect="hlo")
    assert 'custom_call_target="AwsNeuronCustomNativeKernel"' in text
    assert "output_to_operand_aliasing={{}: (0, {})}" in text
    assert "xla___op_NkiKernelCallImpl" in text
    cfg = k.dump_config(X, X)
    assert cfg.backend_config in text


def test_neuron_lowering_by_environment(monkeypatch):
    monkeypatch.setenv("GOLDTRACE_KERNEL_LOWERING", "neuron")
    k = nki.jit(_add)
    text = jax.jit(lambda a: k(a, a)).lower(X).as_text(dialect="hlo")
    assert "AwsNeuronCustomNativeKernel" in text


def test_grad_through_a_kernel_is_a_clear_error():
    k = nki.jit(_add)
    with pytest.raises(nki.KernelError, match="custom_vjp"):
        jax.grad(lambda a: k(a, a).sum())(X)
