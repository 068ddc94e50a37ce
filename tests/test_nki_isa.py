"""Each nisa instruction and the rest of the nl surface, against numpy."""

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

from goldtrace import nki
import goldtrace.nki.isa as nisa
import goldtrace.nki.language as nl

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def one_out(fn, out_shape, out_dtype=np.float32):
    """A kernel storing fn(loaded inputs) into a fresh output."""

    def body(*args):
        out = nl.ndarray(out_shape, dtype=out_dtype, buffer=nl.shared_hbm)
        tiles = [nl.load(a) for a in args]
        nl.store(out, value=fn(*tiles))
        return out

    return nki.jit(body)


def test_tensor_partition_reduce():
    x = rand(128, 32)
    k = one_out(lambda t: nisa.tensor_partition_reduce(np.add, t), (1, 32))
    np.testing.assert_allclose(k(x), x.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-5)


def test_activation_reduce_and_bias_scale():
    x, b = rand(128, 64), rand(128, 1)

    @nki.jit
    def k(a, bias):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((128, 1), dtype=nl.float32)
        y = nisa.activation_reduce(nl.tanh, nl.load(a), reduce_op=np.add, reduce_res=red, bias=nl.load(bias), scale=0.5)
        nl.store(o, value=y)
        nl.store(r, value=red)
        return o, r

    o, r = k(x, b)
    want = np.tanh(np.float32(0.5) * x + b)
    np.testing.assert_allclose(o, want, rtol=3e-6, atol=1e-6)
    np.testing.assert_allclose(r, want.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_tensor_scalar_with_per_partition_operand():
    x, v = rand(128, 64), rand(128, 1)
    k = one_out(lambda t, s: nisa.tensor_scalar(t, np.multiply, s, op1=np.add, operand1=2.0), (128, 64))
    np.testing.assert_array_equal(k(x, v), (x * v + np.float32(2.0)).astype(np.float32))


def test_scalar_tensor_tensor():
    x, y = rand(128, 64), rand(128, 64)
    k = one_out(lambda a, b: nisa.scalar_tensor_tensor(data=a, op0=np.multiply, operand0=3.0, op1=np.subtract, operand1=b),
                (128, 64))
    np.testing.assert_array_equal(k(x, y), (x * np.float32(3.0) - y).astype(np.float32))


def test_tensor_scalar_reduce():
    x = rand(128, 64)

    @nki.jit
    def k(a):
        o = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.tensor_scalar_reduce(data=nl.load(a), op0=np.multiply, operand0=2.0, reduce_op=np.add, reduce_res=red)
        nl.store(o, value=red)
        return o

    np.testing.assert_allclose(k(x), (2 * x).sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_iota_memset_and_copy_predicated():
    @nki.jit
    def k(a):
        o = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        ip, jf = nl.mgrid[0:128, 0:16]
        idx = nisa.iota(ip + jf * 2, dtype=nl.float32)
        dst = nisa.memset((128, 16), -1.0, dtype=nl.float32)
        pred = nl.greater(nl.load(a), 0.0)
        nisa.tensor_copy_predicated(src=idx, dst=dst, predicate=pred)
        nl.store(o, value=dst)
        return o

    x = rand(128, 16)
    idx = np.arange(128)[:, None] + 2 * np.arange(16)[None, :]
    np.testing.assert_array_equal(k(x), np.where(x > 0, idx, -1).astype(np.float32))


def test_select_with_immediates():
    x = rand(128, 32)
    k = one_out(lambda t: nl.where(t > 0.5, 1.0, t), (128, 32))
    np.testing.assert_array_equal(k(x), np.where(x > 0.5, 1.0, x).astype(np.float32))


def test_max8_find_index8_match_replace8():
    x = RNG.permutation(128 * 64).reshape(128, 64).astype(np.float32)

    @nki.jit
    def k(a):
        m = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        ix = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        rep = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        mx = nisa.max8(src=t)
        nl.store(m, value=mx)
        nl.store(ix, value=nisa.nc_find_index8(data=t, vals=mx))
        nl.store(rep, value=nisa.nc_match_replace8(data=t, vals=mx, imm=-1.0))
        return m, ix, rep

    m, ix, rep = k(x)
    want = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(m, want)
    np.testing.assert_array_equal(np.take_along_axis(x, ix.astype(np.int64), axis=1), want)
    wrep = x.copy()
    np.put_along_axis(wrep, np.argsort(-x, axis=1)[:, :8], -1.0, axis=1)
    np.testing.assert_array_equal(rep, wrep)


def test_dma_copy_with_accumulate():
    x, y = rand(128, 64), rand(128, 64)

    @nki.jit
    def k(a, b):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=nl.load(a))
        nisa.dma_copy(dst=o, src=nl.load(b), dst_rmw_op=np.add)
        return o

    np.testing.assert_array_equal(k(x, y), x + y)


def test_load_transpose2d_and_dma_transpose():
    x = rand(64, 128)
    k = one_out(lambda t: t, (128, 64))

    @nki.jit
    def kt(a):
        o = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o, value=nl.load_transpose2d(a))
        return o

    np.testing.assert_array_equal(kt(x), x.T)


def test_shared_constant_and_identity():
    c = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)

    @nki.jit
    def k(a):
        o = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        cst = nl.shared_constant(c)
        eye = nl.shared_identity_matrix(128, dtype=nl.float32)
        prod = nisa.nc_matmul(nl.load(eye), nl.load(cst))  # eye.T @ c = c
        nl.store(o, value=nl.add(nl.copy(prod), nl.load(a)))
        return o

    x = rand(128, 4)
    np.testing.assert_array_equal(k(x), c + x)


def test_bool_and_integer_dtypes_and_static_cast():
    x = (rand(128, 16) * 100).astype(np.int32)
    k = one_out(lambda t: nl.static_cast(nl.multiply(t, 2), nl.int16), (128, 16), np.int16)
    np.testing.assert_array_equal(k(x), (x * 2).astype(np.int16))


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float16])
def test_output_rounding_matches_ml_dtypes(dtype):
    x = rand(128, 64)
    k = one_out(lambda t: nl.exp(t, dtype=dtype), (128, 64), dtype)
    got = k(x)
    assert got.dtype == np.dtype(dtype)
    want = np.exp(x.astype(np.float64)).astype(np.float32).astype(dtype)
    mism = np.sum(got.astype(np.float32) != want.astype(np.float32))
    # exp in f32 then one rounding: an f32 exp within an ulp may round to a neighbouring
    # value only where the f64 result sits on a rounding boundary; allow a handful.
    assert mism <= 2, mism


def test_dropout_is_deterministic_and_has_the_rate():
    x = np.ones((128, 512), np.float32)

    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o, value=nl.dropout(nl.load(a), rate=0.25))
        return o

    a1, a2 = k(x), k(x)
    np.testing.assert_array_equal(a1, a2)
    kept = (a1 != 0).mean()
    assert 0.70 < kept < 0.80


def test_all_reduce_across_program_instances():
    x = rand(4 * 128, 8)

    @nki.jit
    def k(a):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        s = nl.all_reduce(t, op=np.add)
        nl.store(o[i * 128:(i + 1) * 128, :], value=s)
        return o

    got = k[4](x)
    want = x.reshape(4, 128, 8).sum(axis=0)
    for i in range(4):
        np.testing.assert_allclose(got[i * 128:(i + 1) * 128], want, rtol=1e-5, atol=1e-5)
    assert k[4].dump_config(x).has_collectives


def test_atomic_rmw_from_every_instance():
    x = rand(128, 8)

    @nki.jit
    def k(a, acc: nki.typing.mutable_tensor):
        nl.atomic_rmw(acc, value=nl.load(a), op=np.add)
        return acc

    got = k[8](x, np.zeros((128, 8), np.float32))
    np.testing.assert_allclose(got, 8 * x, rtol=1e-5, atol=1e-5)


def test_benchmark_and_profile(tmp_path):
    x = rand(128, 64)
    bench = nki.benchmark(one_out(lambda t: nl.exp(t), (128, 64)), warmup=1, iters=3)
    out = bench(x)
    np.testing.assert_allclose(out, np.exp(x), rtol=3e-6)
    p50 = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    assert p50 > 0
    prof = nki.profile(one_out(lambda t: nl.exp(t), (128, 64)), working_directory=str(tmp_path), save_trace_name="p")
    prof(x)
    assert (tmp_path / "p.json").exists()


def test_compat_install_runs_a_file_written_for_neuronxcc(tmp_path):
    src = textwrap.dedent('''
        import goldtrace.nki.compat
        goldtrace.nki.compat.install()
        import numpy as np
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl
        import neuronxcc.nki.isa as nisa
        from neuronxcc.nki.isa import constants
        from neuronxcc.nki.language import par_dim

        @nki.jit
        def double(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray((par_dim(128), a.shape[1]), dtype=a.dtype)
            t[...] = nl.load(a)
            nl.store(out, value=nisa.tensor_scalar(t, np.multiply, 2.0, engine=nisa.vector_engine))
            return out

        x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
        assert np.array_equal(nki.simulate_kernel(double, x), 2 * x)
        print("ok")
    ''')
    f = tmp_path / "k.py"
    f.write_text(src)
    r = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


def test_mod_alloc_placements_alias_like_the_device():
    import goldtrace.nki.compiler as ncc

    @nki.jit
    def k(a, b):
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t1 = nl.ndarray((128, 64), dtype=nl.float32, buffer=ncc.sbuf.alloc(base_addr=0))
        t2 = nl.ndarray((128, 64), dtype=nl.float32, buffer=ncc.sbuf.alloc(base_addr=0))
        t1[...] = nl.load(a)
        t2[...] = nl.load(b)  # same bytes: overwrites t1
        nl.store(o, value=t1)
        return o

    x, y = rand(128, 64), rand(128, 64)
    np.testing.assert_array_equal(k(x, y), y)


def test_select_reduce():
    x, y = rand(128, 32), rand(128, 32)

    @nki.jit
    def k(a, b):
        o = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        ta, tb = nl.load(a), nl.load(b)
        d = nl.ndarray((128, 32), dtype=nl.float32)
        red = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.select_reduce(dst=d, predicate=nl.greater(ta, tb), on_true=ta, on_false=-5.0, reduce_res=red)
        nl.store(o, value=d)
        nl.store(r, value=red)
        return o, r

    o, r = k(x, y)
    want = np.where(x > y, x, np.float32(-5.0))
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(r, want.max(axis=1, keepdims=True))


def test_gather_flattened_and_dynamic_row_gather():
    x = rand(128, 64)
    idx = RNG.integers(0, 64, (128, 16)).astype(np.int32)

    @nki.jit
    def k(a, i):
        o = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o, value=nl.gather_flattened(nl.load(a), nl.load(i)))
        return o

    np.testing.assert_array_equal(k(x, idx), np.take_along_axis(x, idx, axis=1))

    table = rand(1000, 32)
    rows = RNG.integers(0, 1000, (128, 1)).astype(np.int32)

    @nki.jit
    def lookup(t, r):
        o = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        ids = nl.load(r)
        iy = nl.arange(32)[None, :]
        nl.store(o, value=nl.load(t[ids, iy]))
        return o

    np.testing.assert_array_equal(lookup(table, rows), table[rows[:, 0]])


def test_activation_accumulator_registers():
    """reduce_cmd drives the scalar engine's accumulator registers across
    instructions: reset_reduce starts them from one tile's row sums, reduce
    adds the next tiles' (also across affine_range iterations, whose shared
    register state keeps them in order), reduce_res reads them out, reset
    zeroes them."""
    x = rand(128, 4, 64)

    @nki.jit
    def k(a):
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        first = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        zeros = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        plain = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation(nl.exp, nl.load(a[:, 0, :]), reduce_op=np.add, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nl.store(first, value=r)
        for i in nl.affine_range(3):
            nisa.activation(nl.exp, nl.load(a[:, i + 1, :]), reduce_op=np.add, reduce_cmd=nisa.reduce_cmd.reduce)
        acc = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation(nl.copy, nl.load(a[:, 0, 0:1]), reduce_res=acc, reduce_cmd=nisa.reduce_cmd.idle)
        # idle with reduce_res: the instruction's own reduction (legacy form), registers untouched
        nl.store(plain, value=acc)
        nisa.activation(nl.exp, nl.load(a[:, 0, :]), reduce_res=r, reduce_cmd=nisa.reduce_cmd.reduce)
        nl.store(total, value=r)
        z = nl.ndarray((128, 1), dtype=nl.float32)
        nisa.activation(nl.copy, nl.load(a[:, 0, :]), reduce_res=z, reduce_cmd=nisa.reduce_cmd.reset)
        nl.store(zeros, value=z)
        return total, first, zeros, plain

    total, first, zeros, plain = k(x)
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(first[:, 0], e[:, 0, :].sum(-1), rtol=2e-5)
    # registers: chunk 0 (reset_reduce), chunks 1..3 (the loop), chunk 0 again
    np.testing.assert_allclose(total[:, 0], e.sum((1, 2)) + e[:, 0, :].sum(-1), rtol=2e-5)
    np.testing.assert_array_equal(zeros, np.zeros((128, 1), np.float32))
    np.testing.assert_array_equal(plain, x[:, 0, 0:1])


def test_range_select_accumulates_max_in_registers():
    x = rand(128, 3, 32)

    @nki.jit
    def k(a, lo, hi):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((128, 1), dtype=nl.float32)
        l, h = nl.load(lo), nl.load(hi)
        for i in nl.static_range(3):
            cmd = nisa.reduce_cmd.reset_reduce if i == 0 else nisa.reduce_cmd.reduce
            nisa.range_select(on_true_tile=nl.load(a[:, i, :]), comp_op0=np.greater_equal, comp_op1=np.less,
                              bound0=l, bound1=h, reduce_cmd=cmd, reduce_res=r if i == 2 else None, reduce_op=np.max)
        nl.store(out, value=r)
        return out

    lo = np.full((128, 1), 4, np.float32)
    hi = np.full((128, 1), 20, np.float32)
    got = k(x, lo, hi)
    want = x[:, :, 4:20].max(axis=(1, 2))
    # the registers start from reset_reduce's maximum; reduce keeps the max
    np.testing.assert_array_equal(got[:, 0], want)


def test_reduce_cmd_errors():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.activation(nl.exp, nl.load(a), reduce_cmd=7))
        return out

    with pytest.raises(nki.KernelError, match=r"test_nki_isa.py:\d+: activation: unknown reduce_cmd 7"):
        k(rand(128, 8))


@pytest.mark.parametrize("shape,perm", [((4, 8, 16), (2, 1, 0)), ((2, 3, 4, 5), (3, 1, 2, 0))])
@pytest.mark.parametrize("from_hbm", [True, False])
def test_dma_transpose_3d_4d(shape, perm, from_hbm):
    x = rand(*shape)
    out_shape = tuple(shape[a] for a in perm)

    @nki.jit
    def k(a):
        out = nl.ndarray(out_shape, dtype=nl.float32, buffer=nl.shared_hbm)
        src = a if from_hbm else nl.load(a)
        y = nisa.dma_transpose(src, axes=perm)
        nl.store(out, value=y)
        return out

    np.testing.assert_array_equal(k(x), np.transpose(x, perm))


def test_dma_transpose_rejects_other_axes():
    @nki.jit
    def k(a):
        out = nl.ndarray((8, 4, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.dma_transpose(nl.load(a), axes=(1, 0, 2)))
        return out

    with pytest.raises(nki.KernelError, match=r"test_nki_isa.py:\d+: dma_transpose of a 3-D tile supports axes=\(2, 1, 0\)"):
        k(rand(4, 8, 16))
