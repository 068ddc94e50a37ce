"""Kernels on torch tensors: the torch-xla custom-call (target, config,
aliasing, graph hashes, operand order), its goldens, and CPU torch tensors
through the simulator. Real torch 2.9 + torch-xla 2.9 on the CPU PJRT device."""

import os
import re

os.environ.setdefault("PJRT_DEVICE", "CPU")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from reference import require  # noqa: E402

torch = require("torch")
torch_xla = require("torch_xla")
from torch_xla import _XLAC  # noqa: E402

import goldtrace  # noqa: E402
from goldtrace import nki  # noqa: E402
import goldtrace.nki.language as nl  # noqa: E402
import goldtrace.nki.typing as nt  # noqa: E402
from goldtrace.nki import _torch_xla as tx  # noqa: E402
from goldtrace.nki.errors import KernelError  # noqa: E402


def _sub(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.subtract(nl.load(a), nl.load(b)))
    return out


sub = nki.jit(_sub)


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


@nki.jit
def axpy(y: nt.mutable_tensor, x, alpha):
    """y += alpha * x, written into y's buffer (operand 0 aliases output 0)."""
    nl.store(y, value=nl.add(nl.load(y), nl.multiply(nl.load(x), alpha)))
    return y


@nki.jit
def sum_and_scale(a, y: nt.mutable_tensor):
    """(a + y, y * 2): a tuple whose second output is written into y."""
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x, t = nl.load(a), nl.load(y)
    nl.store(s, value=nl.add(x, t))
    nl.store(y, value=nl.multiply(t, 2.0))
    return s, y


@nki.jit
def double_into(a, out):
    """The old style: the output is an argument, written with nl.store."""
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))


@pytest.fixture(scope="module")
def dev():
    return torch_xla.device()


def _xla(dev, *arrays):
    return [torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in arrays]


def _hlo(outs):
    return _XLAC._get_xla_tensors_hlo(list(outs) if isinstance(outs, (list, tuple)) else [outs])


def _custom_calls(hlo):
    return [ln for ln in hlo.splitlines() if "custom-call(" in ln]


def _backend_config(line):
    return re.search(r'backend_config="([^"]*)"', line).group(1)


# -- the HLO: target, config, aliasing ---------------------------------------------

def test_hlo_holds_target_config_and_no_alias(dev, rng):
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    out = sub(a, b)
    assert out.device.type == "xla" and tuple(out.shape) == (4, 8) and out.dtype == torch.float32
    (line,) = _custom_calls(_hlo(out))
    assert 'custom_call_target="AwsNeuronNkiKernel"' in line
    assert "output_to_operand_aliasing" not in line
    assert "api_version" not in line  # API_VERSION_ORIGINAL prints nothing
    cfg = sub.dump_config(a, b)
    assert _backend_config(line) == cfg.backend_config
    keys = nki.decode_backend_config(_backend_config(line))
    assert keys["func_name"] == "_sub"
    assert keys["serialize_dims"] == [[4, 8], [4, 8]]
    assert keys["kernel_return"] is True and keys["result_is_sequence"] is False


def test_hlo_holds_aliasing(dev, rng):
    y, x = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    cfg = axpy.dump_config(y, x, 2.0)
    assert cfg.operand_output_aliases == {0: 0}
    (line,) = _custom_calls(_hlo(axpy(y, x, 2.0)))
    assert "output_to_operand_aliasing={{}: (0, {})}" in line
    keys = nki.decode_backend_config(_backend_config(line))
    assert keys["func_name"] == "axpy"
    assert [c["name"] for c in keys["constant_values"]] == ["alpha"]


def test_tuple_result_aliases_by_tuple_index(dev, rng):
    a, y = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    res = sum_and_scale(a, y)
    assert isinstance(res, tuple) and len(res) == 2
    assert all(tuple(r.shape) == (4, 8) and r.dtype == torch.float32 for r in res)
    (line,) = _custom_calls(_hlo(res))
    # output 1 (a tuple element of the custom-call) is written into operand 1 (y)
    assert "output_to_operand_aliasing={{1}: (1, {})}" in line
    assert re.search(r"= \(f32\[4,8\]\{1,0\}, f32\[4,8\]\{1,0\}\) custom-call\(", line)


def test_has_collectives_frontend_attribute(dev, rng):
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    cfg = add.dump_config(a, b)
    assert cfg.has_collectives is False
    (plain,) = _custom_calls(_hlo(tx.emit(cfg, [a, b])))
    assert "frontend_attributes" not in plain
    (marked,) = _custom_calls(_hlo(tx.emit(cfg._replace(has_collectives=True), [a, b])))
    assert 'frontend_attributes={has_collectives="1"}' in marked


def test_return_types_and_dtypes(dev):
    for dt, hlo_name in [(torch.bfloat16, "bf16"), (torch.float16, "f16"), (torch.int32, "s32"),
                         (torch.float8_e4m3fn, "f8e4m3fn"), (torch.float8_e5m2, "f8e5m2")]:
        a = torch.zeros(2, 16, dtype=dt).to(dev)
        b = torch.zeros(2, 16, dtype=dt).to(dev)
        out = add(a, b)
        assert out.dtype == dt and tuple(out.shape) == (2, 16)
        (line,) = _custom_calls(_hlo(out))
        assert line.split("=", 1)[1].strip().startswith(f"{hlo_name}[2,16]"), line


# -- graph hashes: specializations never share a program ---------------------------

def test_graph_hash_differs_by_config_and_matches_for_identical(dev, rng):
    y, x = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    h2 = _XLAC._get_graph_hash([axpy(y, x, 2.0)])
    h2_again = _XLAC._get_graph_hash([axpy(y, x, 2.0)])
    h3 = _XLAC._get_graph_hash([axpy(y, x, 3.0)])
    assert axpy.dump_config(y, x, 2.0).backend_config != axpy.dump_config(y, x, 3.0).backend_config
    assert h2 == h2_again
    assert h2 != h3
    # two kernels on the same shapes
    assert _XLAC._get_graph_hash([add(y, x)]) != _XLAC._get_graph_hash([sub(y, x)])


def test_graph_hash_differs_by_aliasing(dev, rng):
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    cfg = add.dump_config(a, b)
    plain = _XLAC._get_graph_hash(tx.emit(cfg, [a, b]))
    alias0 = _XLAC._get_graph_hash(tx.emit(cfg._replace(operand_output_aliases={0: 0}), [a, b]))
    alias1 = _XLAC._get_graph_hash(tx.emit(cfg._replace(operand_output_aliases={1: 0}), [a, b]))
    assert len({plain, alias0, alias1}) == 3


def test_generic_custom_call_would_collide(dev, rng):
    """Why the user-computation path: torch-xla's own custom-call hashes only its
    target, so two configs on the same shapes share a graph hash there."""
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    c2, c3 = axpy.dump_config(a, b, 2.0), axpy.dump_config(a, b, 3.0)
    g2 = _XLAC._xla_custom_call([a, b], tx.TARGET, [[4, 8]], [torch.float32], False, c2.backend_config, 1, {})
    g3 = _XLAC._xla_custom_call([a, b], tx.TARGET, [[4, 8]], [torch.float32], False, c3.backend_config, 1, {})
    assert _XLAC._get_graph_hash(g2) == _XLAC._get_graph_hash(g3)
    assert _XLAC._get_graph_hash([axpy(a, b, 2.0)]) != _XLAC._get_graph_hash([axpy(a, b, 3.0)])


# -- operand order ------------------------------------------------------------------

def _param_numbers(comp_lines):
    return {m.group(1): int(m.group(2)) for m in (re.search(r"%(\S+) = .* parameter\((\d+)\)", ln) for ln in comp_lines) if m}


def _operand_names(line, op):
    args = line.split(f" {op}(", 1)[1].split(")", 1)[0]
    return re.findall(r"%([\w.\-]+)", args)


def custom_call_operand_tensor_ids(outs):
    """The torch tensor ids feeding the custom-call's operands, in operand order,
    read from the graph's HLO: custom-call operand -> callee parameter -> call
    operand -> entry parameter -> device data tensor (parameter order)."""
    hlo = _hlo(outs)
    blocks = re.split(r"\n\n+", hlo.strip())
    callee = next(b for b in blocks if "custom-call(" in b)
    entry = next(b for b in blocks if b.lstrip().startswith("ENTRY") or "\nENTRY" in b)
    entry = entry[entry.index("ENTRY"):]
    cparams = _param_numbers(callee.splitlines())
    (cc,) = _custom_calls(callee)
    callee_params = [cparams[n] for n in _operand_names(cc, "custom-call")]
    eparams = _param_numbers(entry.splitlines())
    (call,) = [ln for ln in entry.splitlines() if " call(" in ln]
    call_ops = [eparams[n] for n in _operand_names(call, "call")]
    ids, _ = _XLAC._get_tensors_xla_device_data_node(list(outs))
    return [ids[call_ops[p]] for p in callee_params]


def test_operand_order_same_shapes(dev, rng):
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    ia, ib = _XLAC._xla_get_tensor_id(a), _XLAC._xla_get_tensor_id(b)
    assert custom_call_operand_tensor_ids([sub(a, b)]) == [ia, ib]
    assert custom_call_operand_tensor_ids([sub(b, a)]) == [ib, ia]


def test_operand_order_check_catches_a_naive_order(dev, rng, monkeypatch):
    """Feeding the user computation its inputs in list order swaps same-shaped
    operands (its parameters are numbered in reverse); the check above sees it."""
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    cfg = sub.dump_config(a, b)
    staged, _ = tx._stage("naive", cfg, [((4, 8), np.dtype(np.float32))] * 2)
    assert staged.order == (1, 0)
    naive = _XLAC._xla_user_computation("nki::naive", [a, b], staged.computation)
    ia, ib = _XLAC._xla_get_tensor_id(a), _XLAC._xla_get_tensor_id(b)
    assert custom_call_operand_tensor_ids(naive) == [ib, ia]
    an, bn = a.cpu().numpy(), b.cpu().numpy()
    g = _golden_of_graph(naive + [sub(a, b)], {ia: an, ib: bn})
    np.testing.assert_array_equal(g[0], bn - an)  # the swap, in numbers
    np.testing.assert_array_equal(g[1], an - bn)


# -- the hooks, TorchXlaKernel, errors ----------------------------------------------

DTYPES = [(torch.bfloat16, ml_dtypes.bfloat16), (torch.float16, np.float16), (torch.float32, np.float32),
          (torch.int8, np.int8), (torch.int16, np.int16), (torch.int32, np.int32), (torch.uint8, np.uint8),
          (torch.bool, np.bool_), (torch.float8_e4m3fn, ml_dtypes.float8_e4m3fn),
          (torch.float8_e5m2, ml_dtypes.float8_e5m2), (torch.uint16, np.uint16), (torch.uint32, np.uint32)]


@pytest.mark.parametrize("tdt,ndt", DTYPES, ids=[str(t) for t, _ in DTYPES])
def test_dtype_translation(tdt, ndt):
    k = tx.TorchXlaKernel(func=_sub)
    assert k.translate_to_neuron_dtype(tdt) == np.dtype(ndt)
    assert tx.torch_dtype_of(np.dtype(ndt)) == tdt
    t = torch.zeros(3, 5, dtype=tdt)
    assert k.is_framework_tensor(t) and not k.is_framework_tensor(np.zeros(3))
    assert k.map_framework_tensor(t) == ((3, 5), tdt)


@pytest.mark.parametrize("tdt,ndt", DTYPES, ids=[str(t) for t, _ in DTYPES])
def test_cpu_conversion_is_bit_exact_and_shares_memory(tdt, ndt, rng):
    raw = rng.integers(0, 256, size=(3, 8), dtype=np.uint8)
    if tdt == torch.bool:
        raw = raw & 1
    n = np.dtype(ndt).itemsize
    bits = raw.view(np.uint8).repeat(n, axis=1)[:, :8].copy()  # 8 bytes a row
    want = bits.view(ndt)
    t = tx.numpy_to_torch(want)
    assert t.dtype == tdt and tuple(t.shape) == want.shape
    back = tx.torch_to_numpy(t)
    assert back.dtype == np.dtype(ndt)
    np.testing.assert_array_equal(back.view(np.uint8), want.view(np.uint8))
    # the same bits torch sees
    np.testing.assert_array_equal(t.view(torch.uint8).numpy(), want.view(np.uint8))
    back[0, 0] = want[1, 1]
    assert t.view(torch.uint8)[0, :n].tolist() == want[1:2, 1:2].view(np.uint8).ravel().tolist()


def test_unsupported_dtype_is_named(dev):
    with pytest.raises(KernelError, match="float64"):
        add(torch.zeros(4, 8, dtype=torch.float64).to(dev), torch.zeros(4, 8, dtype=torch.float64).to(dev))
    with pytest.raises(KernelError, match="complex64"):
        tx.translate_to_neuron_dtype(torch.complex64)


def test_mixed_devices_are_an_error_naming_the_argument(dev):
    with pytest.raises(KernelError, match="'b'.*not an XLA tensor"):
        sub(torch.zeros(4, 8).to(dev), torch.zeros(4, 8))


def test_torch_xla_kernel_class(dev, rng):
    k = tx.TorchXlaKernel(func=_sub, func_name="sub_k")
    assert isinstance(k, nki.FrameworkKernel)
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    cfg = k.dump_config(a, b)
    assert cfg.input_names == ("a", "b") and cfg.return_types == (((4, 8), np.dtype(np.float32)),)
    assert k.dump_config(a, b) is cfg  # cached
    out = k.call(cfg, [a, b])
    (line,) = _custom_calls(_hlo(out))
    assert nki.decode_backend_config(_backend_config(line))["func_name"] == "sub_k"
    assert custom_call_operand_tensor_ids([out]) == [_XLAC._xla_get_tensor_id(a), _XLAC._xla_get_tensor_id(b)]
    assert k(a, b) is not None  # calling it on XLA tensors emits the same call
    assert _XLAC._get_graph_hash([k(a, b)]) == _XLAC._get_graph_hash([out])


def test_old_style_kernel_updates_its_output_argument(dev, rng):
    a, out = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), np.zeros((4, 8), np.float32))
    assert double_into(a, out) is None
    (line,) = _custom_calls(_hlo(out))
    assert 'custom_call_target="AwsNeuronNkiKernel"' in line
    assert "output_to_operand_aliasing={{}: (1, {})}" in line


# -- running: CPU torch tensors and goldens of the torch-xla graph --------------------

def test_cpu_torch_tensors_run_in_the_simulator(rng):
    a = rng.standard_normal((4, 8), dtype=np.float32)
    b = rng.standard_normal((4, 8), dtype=np.float32)
    out = sub(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(out, torch.Tensor) and out.device.type == "cpu" and out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), a - b)
    s, y2 = sum_and_scale(torch.from_numpy(a), torch.from_numpy(b.copy()))
    np.testing.assert_array_equal(s.numpy(), a + b)
    np.testing.assert_array_equal(y2.numpy(), b * 2)
    bf = (a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16))
    outb = add(*[tx.numpy_to_torch(x) for x in bf])
    assert outb.dtype == torch.bfloat16
    np.testing.assert_array_equal(tx.torch_to_numpy(outb), (bf[0].astype(np.float32) + bf[1].astype(np.float32)).astype(ml_dtypes.bfloat16))


def test_cpu_old_style_writes_the_torch_argument(rng):
    a = rng.standard_normal((4, 8), dtype=np.float32)
    out = torch.zeros(4, 8)
    assert double_into(torch.from_numpy(a), out) is None
    np.testing.assert_array_equal(out.numpy(), a * 2)


def test_zero_d_tensor_is_a_one_element_operand(dev):
    a, b = torch.tensor(1.5).to(dev), torch.tensor(2.0).to(dev)
    out = add(a, b)
    assert tuple(out.shape) == (1,)
    (line,) = _custom_calls(_hlo(out))
    assert line.split("=", 1)[1].strip().startswith("f32[1]{0} custom-call(f32[1]{0} %p")
    assert nki.decode_backend_config(_backend_config(line))["serialize_dims"] == [[1], [1]]


def test_keyword_and_positional_arguments_give_the_same_call(dev, rng):
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    ia, ib = _XLAC._xla_get_tensor_id(a), _XLAC._xla_get_tensor_id(b)
    assert custom_call_operand_tensor_ids([sub(a, b)]) == [ia, ib]
    assert custom_call_operand_tensor_ids([sub(b=b, a=a)]) == [ia, ib]
    assert custom_call_operand_tensor_ids([sub(a, b=b)]) == [ia, ib]
    assert custom_call_operand_tensor_ids([sub(b, b=a)]) == [ib, ia]


def _golden_of_graph(outs, by_id):
    """Goldens of the torch-xla graph's HloModuleProto, inputs in its parameter
    order: our arrays for our tensors, torch-xla's own data for the scalars it
    uploads (the 2.0 of `t * 2.0`)."""
    ids, data = _XLAC._get_tensors_xla_device_data_node(list(outs))
    proto = _XLAC._get_xla_tensors_hlo_proto(list(outs))
    inputs = [by_id[i] if i in by_id else d.cpu().numpy() for i, d in zip(ids, data)]
    assert sum(i in by_id for i in ids) == len(by_id)
    return goldtrace.golden(proto, *inputs)


def test_golden_of_torch_xla_graph_runs_the_kernels(dev, rng):
    a = rng.standard_normal((4, 8), dtype=np.float32)
    b = rng.standard_normal((4, 8), dtype=np.float32)
    ta, tb = _xla(dev, a, b)
    by_id = {_XLAC._xla_get_tensor_id(ta): a, _XLAC._xla_get_tensor_id(tb): b}
    # same-shaped operands in both orders: a swap would show
    g = _golden_of_graph([sub(ta, tb), sub(tb, ta)], by_id)
    np.testing.assert_array_equal(g[0], a - b)
    np.testing.assert_array_equal(g[1], b - a)
    # a kernel mixed with ordinary torch ops, an aliased in-place kernel and a tuple kernel
    # (y is also written in place by the second kernel, yet stays live as output 0)
    y = axpy(ta * 2.0, tb, 3.0)
    s, y2 = sum_and_scale(tb + 1.0, y)
    g = _golden_of_graph([y, s, y2], by_id)
    y_ref = a * np.float32(2) + b * np.float32(3)
    np.testing.assert_allclose(g[0], y_ref, rtol=1e-6)
    np.testing.assert_allclose(g[1], (b + np.float32(1)) + y_ref, rtol=1e-6)
    np.testing.assert_allclose(g[2], y_ref * 2, rtol=1e-6)


def test_golden_of_old_style_kernel_on_torch_xla(dev, rng):
    a = rng.standard_normal((4, 8), dtype=np.float32)
    ta, tout = _xla(dev, a, np.zeros((4, 8), np.float32))
    double_into(ta, tout)
    by_id = {_XLAC._xla_get_tensor_id(ta): a}
    ids, _ = _XLAC._get_tensors_xla_device_data_node([tout])
    by_id.update({i: np.zeros((4, 8), np.float32) for i in ids if i not in by_id})
    (g,) = _golden_of_graph([tout], by_id)
    np.testing.assert_array_equal(g, a * np.float32(2))


def test_restaging_gives_the_same_graph_hash(dev, rng, monkeypatch):
    """The staged computation is a function of the config alone: built again
    (a new process, an evicted entry) it hashes the same, so compiled programs
    are reused across runs."""
    a, b = _xla(dev, rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32))
    h1 = _XLAC._get_graph_hash([axpy(a, b, 2.0)])
    _ = torch.ones(3).to(dev) * 5  # unrelated lazy-graph activity in between
    monkeypatch.setattr(tx, "_STAGED", type(tx._STAGED)())
    monkeypatch.setattr(tx, "_FAST", {})
    assert _XLAC._get_graph_hash([axpy(a, b, 2.0)]) == h1
    assert _XLAC._get_graph_hash([axpy(a, b, 3.0)]) != h1
