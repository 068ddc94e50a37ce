"""Kernels in goldtrace's NKI language run in the simulator, checked against numpy."""

import io
import contextlib

import ml_dtypes
import numpy as np
import pytest

import nki_kernels as K
from goldtrace import nki
import goldtrace.nki.isa as nisa
import goldtrace.nki.language as nl
import goldtrace.nki.typing as nt

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def f32_close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=rtol, atol=atol)


def test_add_spmd_grid_is_exact():
    a, b = rand(256, 1024), rand(256, 1024)
    out = K.add_spmd[2, 2](a, b)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, a + b)


def test_add_spmd_via_simulate_kernel_and_baremetal():
    a, b = rand(256, 1024), rand(256, 1024)
    np.testing.assert_array_equal(nki.simulate_kernel(nki.baremetal(K.add_spmd)[2, 2], a, b), a + b)


def test_grid_too_small_leaves_output_unwritten_as_nan():
    a, b = rand(256, 1024), rand(256, 1024)
    out = K.add_spmd[1, 2](a, b)
    np.testing.assert_array_equal(out[:128], (a + b)[:128])
    # Output rows no instance wrote: the simulator's NaN sentinel, not zeros.
    assert np.isnan(out[128:]).all()


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16])
def test_add_rounds_once_to_the_output_dtype(dtype):
    a, b = rand(128, 512).astype(dtype), rand(128, 512).astype(dtype)
    out = K.add_spmd(a, b)
    assert out.dtype == np.dtype(dtype)
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(out.view(np.uint16) if np.dtype(dtype).itemsize == 2 else out,
                                  want.view(np.uint16) if np.dtype(dtype).itemsize == 2 else want)


def test_masked_add_on_ragged_rows():
    a, b = rand(300, 96), rand(300, 96)
    np.testing.assert_array_equal(K.add_masked(a, b), a + b)


def test_transpose():
    x = rand(128, 96)
    np.testing.assert_array_equal(K.transpose2d(x), x.T)


def test_avgpool():
    x = rand(64, 16, 24)
    want = x.reshape(64, 8, 2, 12, 2).mean(axis=(2, 4))
    f32_close(K.avgpool2x2(x), want, rtol=1e-6, atol=1e-6)


def test_matmul_basic():
    lt, r = rand(128, 64), rand(128, 512)
    f32_close(K.matmul_basic(lt, r), lt.T @ r, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_matmul_tiled(dtype):
    lt, r = rand(256, 256).astype(dtype), rand(256, 1024).astype(dtype)
    out = K.matmul_tiled(lt, r)
    assert out.dtype == np.dtype(dtype)
    want = lt.astype(np.float32).T @ r.astype(np.float32)
    tol = 1e-4 if dtype == np.float32 else 1e-2
    f32_close(out, want, rtol=tol, atol=tol * 16)


def test_matmul_tiled_traces_loops_once():
    lt, r = rand(1024, 1024), rand(1024, 1024)
    text = K.matmul_tiled.trace(lt, r)
    assert text.count("nc_matmul") + text.count("matmul") <= 2, text
    assert "for i2 in affine_range(0, 8)" in text


def test_matmul_untransposed():
    a, b = rand(96, 128), rand(128, 256)
    f32_close(K.matmul_untransposed(a, b), a @ b, rtol=1e-5, atol=1e-4)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_isa_style():
    x = rand(256, 512)
    f32_close(K.softmax_rows(x), _softmax(x), rtol=1e-5, atol=1e-6)


def test_softmax_nl():
    x = rand(128, 200)
    f32_close(K.softmax_nl(x), _softmax(x), rtol=1e-5, atol=1e-6)


def test_layernorm_bn_stats():
    x, g, b = rand(256, 384), rand(384), rand(384)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * g + b
    f32_close(K.layernorm_bn(x, g, b), want, rtol=1e-4, atol=1e-4)


def test_rmsnorm():
    x, w = rand(256, 512), rand(512)
    want = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w
    f32_close(K.rmsnorm(x, w), want, rtol=1e-4, atol=1e-5)


def test_attention():
    q, k, v = rand(128, 128), rand(128, 128), rand(128, 128)
    s = (q.T @ k) / np.sqrt(128)
    want = _softmax(s) @ v
    f32_close(K.attention(q, k, v), want, rtol=1e-4, atol=1e-4)


def test_affine_select_causal():
    x = rand(128, 128)
    want = np.where(np.tril(np.ones((128, 128), bool)), x, np.float32(-9984.0))
    np.testing.assert_array_equal(K.causal_mask_fill(x), want)


def test_iota():
    np.testing.assert_array_equal(K.iota_kernel(), np.arange(128 * 64, dtype=np.int32).reshape(128, 64))


def test_tensor_tensor_scan_cumsum():
    x = rand(128, 64)
    f32_close(K.cumsum_scan(x), np.cumsum(x, axis=1, dtype=np.float32), rtol=1e-5, atol=1e-5)


def test_mutable_parameter_returned_and_caller_array_untouched():
    x = rand(128, 64)
    orig = x.copy()
    out = K.inplace_scale(x)
    np.testing.assert_array_equal(out, orig * 2)


def test_tuple_return():
    a = rand(128, 64)
    s, p = K.two_outputs(a)
    np.testing.assert_array_equal(s, a + a)
    np.testing.assert_array_equal(p, a * a)


def test_old_style_output_argument():
    a, b = rand(128, 64), rand(128, 64)
    out = np.zeros_like(a)
    assert K.old_style_add(a, b, out) is None
    np.testing.assert_array_equal(out, a + b)


def test_nested_trace_kernel_is_inlined():
    a = rand(128, 64)
    np.testing.assert_array_equal(K.uses_subkernel(a), a * a)


def test_sequential_range_carries_state():
    a = rand(8, 32)
    f32_close(K.sequential_prefix(a), np.cumsum(a, axis=0, dtype=np.float32), rtol=1e-6, atol=1e-6)


def test_device_print_prints(capsys):
    a = rand(4, 4)
    K.print_kernel(a)
    assert "tile" in capsys.readouterr().out


@pytest.mark.parametrize("name,np_fn", [
    ("exp", np.exp), ("tanh", np.tanh), ("sqrt", lambda x: np.sqrt(np.abs(x))), ("abs", np.abs),
    ("negative", np.negative), ("square", np.square), ("sin", np.sin), ("cos", np.cos), ("arctan", np.arctan),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("relu", lambda x: np.maximum(x, 0)), ("floor", np.floor),
    ("ceil", np.ceil), ("sign", np.sign), ("reciprocal", lambda x: 1 / x), ("log", lambda x: np.log(np.abs(x))),
    ("rsqrt", lambda x: 1 / np.sqrt(np.abs(x))),
])
def test_unary_functions(name, np_fn):
    fn = getattr(nl, name)
    needs_abs = name in ("sqrt", "log", "rsqrt")

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        if needs_abs:
            t = nl.abs(t)
        nl.store(out, value=fn(t))
        return out

    x = rand(128, 64)
    want = np_fn(x.astype(np.float64)).astype(np.float32)
    f32_close(k(x), want, rtol=3e-6, atol=1e-6)


@pytest.mark.parametrize("name,np_fn", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
    ("maximum", np.maximum), ("minimum", np.minimum), ("greater", np.greater), ("less_equal", np.less_equal),
    ("equal", np.equal),
])
def test_binary_tile_and_scalar(name, np_fn):
    fn = getattr(nl, name)

    @nki.jit
    def k(a, b):
        o1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        o3 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x, y = nl.load(a), nl.load(b)
        nl.store(o1, value=fn(x, y))
        nl.store(o2, value=fn(x, 0.5))
        nl.store(o3, value=fn(0.5, x))
        return o1, o2, o3

    a, b = rand(128, 64), rand(128, 64)
    o1, o2, o3 = k(a, b)
    np.testing.assert_array_equal(o1, np_fn(a, b).astype(np.float32))
    np.testing.assert_array_equal(o2, np_fn(a, np.float32(0.5)).astype(np.float32))
    np.testing.assert_array_equal(o3, np_fn(np.float32(0.5), a).astype(np.float32))


def test_integer_bitwise_ops_are_exact():
    @nki.jit
    def k(a, b):
        o1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x, y = nl.load(a), nl.load(b)
        nl.store(o1, value=nl.bitwise_xor(x, y))
        nl.store(o2, value=nl.bitwise_and(x, y))
        return o1, o2

    a = RNG.integers(-2**31, 2**31 - 1, (128, 32), dtype=np.int32)
    b = RNG.integers(-2**31, 2**31 - 1, (128, 32), dtype=np.int32)
    o1, o2 = k(a, b)
    np.testing.assert_array_equal(o1, a ^ b)
    np.testing.assert_array_equal(o2, a & b)


@pytest.mark.parametrize("red,np_fn", [("sum", np.sum), ("max", np.max), ("min", np.min), ("mean", np.mean),
                                        ("prod", np.prod), ("var", np.var)])
def test_reductions(red, np_fn):
    fn = getattr(nl, red)

    @nki.jit
    def k(a):
        out = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=fn(nl.load(a), axis=1, keepdims=True))
        return out

    x = (rand(128, 16) * 0.5 + 1).astype(np.float32)
    f32_close(k(x), np_fn(x.astype(np.float64), axis=1, keepdims=True), rtol=2e-6, atol=2e-6)


def test_where_and_comparison_mask():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nl.where(t > 0, t, 0.0))
        return out

    x = rand(128, 64)
    np.testing.assert_array_equal(k(x), np.where(x > 0, x, 0).astype(np.float32))


def test_tensor_scalar_two_ops_and_reverse():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nisa.tensor_scalar(t, np.subtract, 1.0, reverse0=True, op1=np.multiply, operand1=3.0))
        return out

    x = rand(128, 64)
    np.testing.assert_array_equal(k(x), ((np.float32(1.0) - x) * np.float32(3.0)).astype(np.float32))


def test_bf16_matmul_result_is_f32_then_rounded_once():
    lt, r = rand(128, 64).astype(ml_dtypes.bfloat16), rand(128, 512).astype(ml_dtypes.bfloat16)
    out = K.matmul_basic(lt, r)
    assert out.dtype == ml_dtypes.bfloat16
    want = (lt.astype(np.float64).T @ r.astype(np.float64))
    # Accumulated in f32 (128 terms), rounded once to bf16: within one bf16 ulp of the exact value.
    err = np.abs(out.astype(np.float64) - want)
    ulp = np.abs(want) * 2.0 ** -7 + 1e-30
    assert (err <= ulp + 1e-3).all()


def test_dump_free_trace_is_deterministic():
    a = rand(128, 64)
    assert K.two_outputs.trace(a) == K.two_outputs.trace(a)


def test_selective_scan_with_block_dimension_accumulator():
    rng = np.random.default_rng(3)
    b, ch, sl, ss = 1, 256, 256, 3
    delta = rng.random((b, ch, sl), dtype=np.float32) * 0.1
    u = rng.random((b, ch, sl), dtype=np.float32)
    A = -rng.random((ch, ss), dtype=np.float32)
    B = rng.random((b, ss, sl), dtype=np.float32)
    C = rng.random((b, ss, sl), dtype=np.float32)
    ref = np.zeros((b, ch, sl), np.float64)
    for n in range(ss):
        dA = np.exp(delta.astype(np.float64) * A[None, :, n, None])
        dBu = delta.astype(np.float64) * u * B[:, n:n + 1, :]
        h = np.zeros((b, ch))
        for t in range(sl):
            h = dA[:, :, t] * h + dBu[:, :, t]
            ref[:, :, t] += h * C[:, n, t][:, None]
    out = K.selective_scan(delta, u, A, B, C)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_layernorm_nl_ragged_rows():
    x, g = rand(200, 96), rand(96)
    want = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g
    f32_close(K.layernorm_nl(x, g, 1e-5), want, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_online_softmax(causal):
    B, H, d, S = 1, 2, 64, 384
    q, k, v = rand(B, H, d, S), rand(B, H, d, S), rand(B, H, S, d)
    s = np.einsum("bhdq,bhdk->bhqk", q.astype(np.float64), k) / np.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("bhqk,bhkd->bhqd", e / e.sum(-1, keepdims=True), v)
    got = K.flash_attention[B, H](q, k, v, causal=causal)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_affine_loop_with_overlapping_hbm_writes_keeps_program_order():
    """Iteration i of an affine_range stores a row into columns i..i+2 of
    one output row, so neighbours overlap: the simulator must not run such
    iterations concurrently; the last writer of each element wins, every run."""
    a = np.arange(24, dtype=np.float32).reshape(8, 3) + 1

    @nki.jit
    def k(x):
        out = nl.ndarray((1, 10), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):
            nl.store(out[0:1, i:i + 3], value=nl.load(x[i:i + 1, :]))
        return out

    want = np.zeros((1, 10), np.float32)
    for i in range(8):
        want[0, i:i + 3] = a[i]
    for _ in range(20):
        np.testing.assert_array_equal(k(a), want)


def test_affine_loop_reading_what_it_writes_keeps_program_order():
    """An affine loop that reads an HBM tensor it also writes (iteration i
    reads row i-1, written by iteration i-1) runs in program order."""
    a = np.ones((8, 64), np.float32)

    @nki.jit
    def k(x: nt.mutable_tensor):
        for i in nl.affine_range(7):
            nl.store(x[i + 1:i + 2, :], value=nl.add(nl.load(x[i:i + 1, :]), 1.0))
        return x

    want = a.copy()
    for i in range(7):
        want[i + 1] = want[i] + 1
    for _ in range(10):
        np.testing.assert_array_equal(k(a.copy()), want)


def _psum_group_far_from_declaration(gap):
    """acc += nc_matmul(...) as the first write of a PSUM tile declared
    without a value, `gap` unrelated instructions after the declaration."""

    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        t = nl.load(a)
        for _ in nl.static_range(gap):
            t = nl.add(t, 0.0)
        acc += nisa.nc_matmul(t, nl.load(b))
        nl.store(out, value=nl.copy(acc))
        return out

    return k


def test_psum_accumulation_group_starts_at_zero_across_event_batches():
    """The tile's alloc becomes the group's zeroing memset even when
    hundreds of events (more than one batch to the builder) lie between."""
    a, b = RNG.standard_normal((128, 128)).astype(np.float32), RNG.standard_normal((128, 128)).astype(np.float32)
    got = _psum_group_far_from_declaration(700)(a, b)
    np.testing.assert_allclose(got, a.T @ b, rtol=1e-5, atol=1e-4)


def test_psum_accumulation_group_too_far_is_refused():
    a = np.ones((128, 128), np.float32)
    with pytest.raises(nki.KernelUnsupportedError, match=r"test_nki_kernels.py:\d+: this accumulation into PSUM tile"):
        _psum_group_far_from_declaration(4200)(a, a)
