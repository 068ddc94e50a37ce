"""Language features public NKI kernels rely on, each in goldtrace's own small
kernels, checked against numpy (the compatibility sweep's regression tests)."""

import ml_dtypes
import numpy as np
import pytest

from goldtrace import nki
import goldtrace.nki.isa as nisa
import goldtrace.nki.language as nl
from goldtrace.nki.errors import KernelError, KernelUnsupportedError

RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# ---- nl.static_cast on host arrays (test harnesses build inputs with it) ----


def test_static_cast_outside_a_kernel_converts_host_arrays():
    x = RNG.random((3, 5))
    got = nl.static_cast(x, nl.bfloat16)
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.bfloat16))
    back = nl.static_cast(got, np.float32)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert nl.static_cast([1.7, -2.2], nl.int32).tolist() == [1, -2]


# ---- `name += x` on a whole tensor keeps the name a tensor ----


@nki.jit
def _accumulate_then_slice(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    for _ in nl.affine_range(3):
        t = nl.load(x)
        acc += t
    half = x.shape[0] // 2
    # acc is still indexable after `acc += ...`
    nl.store(out[0:half, :], value=acc[0:half, :])
    nl.store(out[half:x.shape[0], :], value=acc[half:x.shape[0], :] * 2.0)
    return out


def test_inplace_add_on_a_tensor_name_keeps_it_indexable():
    x = rand(8, 16)
    got = _accumulate_then_slice(x)
    want = 3 * x
    want[4:] *= 2
    np.testing.assert_allclose(got, want, rtol=1e-6)


@nki.jit
def _view_inplace(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    v = t[:, 0:4]
    v += 1.0
    v[...] = v * 3.0  # the rebound name is still a view of t
    nl.store(out, value=t)
    return out


def test_inplace_add_on_a_named_view_keeps_it_a_view():
    x = rand(4, 8)
    want = x.copy()
    want[:, :4] = (want[:, :4] + 1.0) * 3.0
    np.testing.assert_allclose(_view_inplace(x), want, rtol=1e-6)


# ---- reshape of whole HBM tensors (merging and splitting dimensions) ----


@nki.jit
def _gather_rows_of_merged(x, rows):
    # x: (B, H, W, C) viewed as (B, H*W, C); rows: a compile-time tuple
    B, H, W, C = x.shape
    v = x.reshape(shape=(B, H * W, C))
    out = nl.ndarray((B, len(rows), C), dtype=x.dtype, buffer=nl.shared_hbm)
    o = out.reshape((B, len(rows), C))
    ib = nl.arange(B)[:, None]
    ic = nl.arange(C)[None, :]
    for i in nl.static_range(len(rows)):
        t = nl.load(v[ib, rows[i], ic])
        nl.store(o[ib, i, ic], value=t)
    return out


def test_reshape_merging_dims_indexed_by_constants():
    x = rand(2, 5, 3, 8)
    rows = (0, 14, 7, 3, 3, 9)
    got = _gather_rows_of_merged(x, rows)
    np.testing.assert_array_equal(got, x.reshape(2, 15, 8)[:, rows, :])


@nki.jit
def _split_and_sum(x):
    # x: (P, A*B) viewed as (P, A, B); sum over B with tiles of the view
    P, F = x.shape
    A = 4
    v = x.reshape((P, A, F // A))
    out = nl.ndarray((P, A), dtype=x.dtype, buffer=nl.shared_hbm)
    for a in nl.affine_range(A):
        t = nl.load(v[:, a, :])
        nl.store(out[:, a], value=nl.sum(t, axis=1))
    return out


def test_reshape_splitting_a_dim_inside_a_loop():
    x = rand(16, 24)
    np.testing.assert_allclose(_split_and_sum(x), x.reshape(16, 4, 6).sum(axis=2), rtol=1e-5, atol=1e-5)


@nki.jit
def _store_through_split_view(x):
    # write (P, F) tiles into an output (P, F // 8, 8) viewed as... itself split
    # further: (P, F // 8, 2, 4), one (P, 2, 4) block per step
    P, F = x.shape
    out = nl.ndarray((P, F // 8, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    v = out.reshape((P, F // 8, 2, 4))
    for j in nl.affine_range(F // 8):
        t = nl.load(x[:, nl.ds(j * 8, 8)])
        blk = nl.ndarray((P, 2, 4), dtype=x.dtype, buffer=nl.sbuf)
        for h in nl.affine_range(2):
            blk[:, h, :] = nl.exp(t[:, nl.ds(h * 4, 4)])
        nl.store(v[:, j, :, :], value=blk)
    return out


def test_reshape_split_view_of_an_output_in_loops():
    x = rand(8, 32)
    np.testing.assert_allclose(_store_through_split_view(x), np.exp(x).reshape(8, 4, 8), rtol=1e-6)


@nki.jit
def _merged_arange(x):
    B, H, W = x.shape
    v = x.reshape((B, H * W))
    out = nl.ndarray((B, H * W), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(v))
    return out


def test_reshape_access_across_a_merged_dim_is_refused_clearly():
    with pytest.raises(KernelUnsupportedError, match=r"reshaped to \[2, 12\].*merged dimension"):
        _merged_arange(rand(2, 3, 4))


def test_reshape_with_wrong_element_count_is_an_error():
    @nki.jit
    def bad(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        x.reshape((5, 5))
        return out

    with pytest.raises(nki.errors.KernelError, match="cannot reshape"):
        bad(rand(4, 6))


# ---- all_reduce over some program axes only ----


@nki.jit
def _allreduce_axes(x, axes):
    # x: (G0, G1, 4, 8); instance (i, j) contributes x[i, j] and writes the
    # reduction over `axes` to out[i, j]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    t = nl.load(x[i, j, :, :])
    r = nl.all_reduce(t, op=nl.add, program_axes=axes)
    nl.store(out[i, j, :, :], value=r)
    return out


@pytest.mark.parametrize("axes,np_axes", [(0, (0,)), (1, (1,)), ((0, 1), (0, 1)), (None, (0, 1))])
def test_all_reduce_program_axes_groups_instances(axes, np_axes):
    x = rand(2, 3, 4, 8)
    got = _allreduce_axes[2, 3](x, axes)
    want = np.broadcast_to(x.sum(axis=np_axes, keepdims=True), x.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- a data-dependent index plus an affine offset: `offs[0, i] + iy` ----


@nki.jit
def _gather_pairs(src, offs):
    # out[:, 2*i : 2*i+2] = src[:, offs[i] : offs[i]+2]
    P, F = src.shape
    n = offs.shape[1]
    out = nl.ndarray((P, 2 * n), dtype=src.dtype, buffer=nl.shared_hbm)
    s = nl.load(src)
    o = nl.load(offs)
    res = nl.ndarray((P, 2 * n), dtype=src.dtype, buffer=nl.sbuf)
    ip, iw = nl.mgrid[0:P, 0:2]
    for i in nl.affine_range(n):
        res[ip, 2 * i + iw] = nisa.tensor_copy_dynamic_src(s[ip, o[0, i] + iw])
    nl.store(out, value=res)
    return out


def test_dynamic_index_plus_affine_offset():
    src = rand(16, 40)
    offs = np.array([[3, 0, 37, 11, 20]], dtype=np.int32)
    want = np.concatenate([src[:, k:k + 2] for k in offs[0]], axis=1)
    np.testing.assert_array_equal(_gather_pairs(src, offs), want)


# ---- allocation callbacks (nki.compiler sbuf/psum .alloc(func)) ----


def _psum_at(bank, part, addr):
    def f(idx, pdim_size, fdim_size):
        assert idx == () and pdim_size == 32 and fdim_size == 64 * 4
        return (bank, part, addr)
    return f


@nki.jit
def _matmul_in_placed_psum(a, b):
    import goldtrace.nki.compiler as ncc
    out = nl.ndarray((32, 64), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    acc = nl.ndarray((nl.par_dim(32), 64), dtype=np.float32, buffer=ncc.psum.alloc(_psum_at(3, 0, 512)))
    acc[...] = nisa.nc_matmul(at, bt)
    sb = nl.ndarray((nl.par_dim(32), 64), dtype=np.float32, buffer=ncc.sbuf.alloc(lambda idx, p, f: (0, 4096)))
    sb[...] = nl.copy(acc)
    nl.store(out, value=sb)
    return out


def test_psum_and_sbuf_allocation_callbacks():
    a, b = rand(16, 32), rand(16, 64)
    np.testing.assert_allclose(_matmul_in_placed_psum(a, b), a.T @ b, rtol=1e-5, atol=1e-5)


# ---- refused features name themselves and the kernel line ----


def test_tensor_pointers_are_refused_with_the_kernel_line():
    @nki.jit
    def uses_ptr(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        p = x.ptr + 4
        return out

    with pytest.raises(KernelUnsupportedError, match=r"test_nki_compat_features\.py:\d+: tensor pointers"):
        uses_ptr(rand(4, 4))


# ---- nisa.local_gather: every partition of a 16-partition group gathers all
# of the group's valid indices ----


@nki.jit
def _local_gather(src, index, e, valid):
    P = src.shape[0]
    s = nl.load(src)
    ix = nl.load(index)
    g = nisa.local_gather(s, ix, e, valid)
    per = (16 * index.shape[1] if valid is None else valid) * e
    out = nl.ndarray((P, per), dtype=src.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=g)
    return out


def _local_gather_ref(src, index, e, valid):
    P = src.shape[0]
    flat = src.reshape(P, -1)
    rows = []
    for p in range(P):
        g = p // 16
        idx = index[g * 16:(g + 1) * 16].flatten(order="F")
        idx = idx[: valid if valid is not None else idx.size]
        rows.append(np.concatenate([flat[p, k:k + e] for k in idx]))
    return np.stack(rows)


@pytest.mark.parametrize("e,valid", [(1, None), (2, None), (4, 20)])
def test_local_gather_shares_indices_within_each_core(e, valid):
    src = rand(32, 12, 4)
    index = RNG.integers(0, 48 - e + 1, size=(32, 3)).astype(np.uint16)
    np.testing.assert_array_equal(_local_gather(src, index, e, valid), _local_gather_ref(src, index, e, valid))


# ---- nki_call (the old JAX bridge) with functools.partial kernels ----


def _scale_rows_into(x, out, factor, offset=0.0):
    # old style: the output is the trailing tensor argument
    t = nl.load(x)
    nl.store(out, value=nl.add(nl.multiply(t, factor), offset))


def test_nki_call_accepts_a_partial_with_compile_time_keywords():
    import functools

    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from goldtrace.nki._jax_compat import nki_call

    x = jnp.asarray(rand(8, 16))
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    got = nki_call(functools.partial(_scale_rows_into, factor=3.0), x, out_shape=out_shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) * 3.0, rtol=1e-6)
    # a second partial with other constants is another specialization
    got2 = nki_call(functools.partial(functools.partial(_scale_rows_into, factor=-1.0), offset=2.0), x, out_shape=out_shape)
    np.testing.assert_allclose(np.asarray(got2), 2.0 - np.asarray(x), rtol=1e-6)
    k = nki.jit(functools.partial(_scale_rows_into, factor=2.0))
    assert k.__name__ == "_scale_rows_into" and k.func_name == "_scale_rows_into"


# ---- nl.loop_reduce into an accumulator tile ----


@nki.jit
def _row_block_max(x):
    # out[p, 0] = max over blocks k of sum(x[p, block k]) via loop_reduce(max),
    # and out[p, 1] = sum over blocks via loop_reduce(add)
    P, F = x.shape
    nb = F // 8
    out = nl.ndarray((P, 2), dtype=np.float32, buffer=nl.shared_hbm)
    acc_max = nl.full((P, 1), -1e30, dtype=np.float32)
    acc_sum = nl.zeros((P, 1), dtype=np.float32)
    for k in nl.affine_range(nb):
        t = nl.load(x[:, nl.ds(k * 8, 8)])
        s = nl.sum(t, axis=1, keepdims=True)
        acc_max[...] = nl.loop_reduce(s, op=np.maximum, loop_indices=[k], dtype=np.float32)
        acc_sum[:, 0] = nl.loop_reduce(s, op=np.add, loop_indices=(k,))
    res = nl.ndarray((P, 2), dtype=np.float32)
    res[:, 0] = nl.copy(acc_max)
    res[:, 1] = nl.copy(acc_sum)
    nl.store(out, value=res)
    return out


def test_loop_reduce_accumulates_into_its_target():
    x = rand(16, 40)
    blocks = x.reshape(16, 5, 8).sum(axis=2)
    got = _row_block_max(x)
    np.testing.assert_allclose(got[:, 0], blocks.max(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], blocks.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_loop_reduce_used_as_a_value_is_refused():
    @nki.jit
    def bad(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        for k in nl.affine_range(2):
            r = nl.loop_reduce(t, op=np.add, loop_indices=[k])
            nl.store(out, value=nl.exp(r))
        return out

    with pytest.raises(KernelUnsupportedError, match="must be assigned into its accumulator"):
        bad(rand(4, 4))


# ---- index expressions as values; a single element loads as [1, 1] ----


@nki.jit
def _seeded_offsets(x, base):
    # out[i, p, f] = x[p, f] + base[0] + 3*i + program_id(0) (int arithmetic on
    # a loaded element plus loop variables)
    G = 2
    P, F = x.shape
    out = nl.ndarray((G, 3, P, F), dtype=np.float32, buffer=nl.shared_hbm)
    b = nl.load(base[0])  # [1, 1]
    t = nl.load(x)
    pid = nl.program_id(0)
    for i in nl.affine_range(3):
        off = nl.add(b[0, 0], 3 * i + pid)  # a [1, 1] int tile
        row = nl.add(t, off.broadcast_to((P, 1)), dtype=np.float32)
        nl.store(out[pid, i], value=row)
    return out


def test_index_expressions_become_values_and_single_elements_load_2d():
    x = rand(4, 6)
    got = _seeded_offsets[2](x, np.array([10], dtype=np.int32))
    want = np.stack([np.stack([x + 10 + 3 * i + g for i in range(3)]) for g in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ---- PSUM results feeding engines that cannot read PSUM: staged via SBUF ----


@nki.jit
def _transpose_chain(a, b):
    # a: (K, M), b: (M, N): out = (a^T)^T... computes a @ b via a tensor-engine
    # transpose whose PSUM result feeds nc_matmul, and stores a PSUM tile directly
    K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((K, N), dtype=np.float32, buffer=nl.shared_hbm)
    outT = nl.ndarray((M, K), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    aT = nisa.nc_transpose(at)  # (M, K) in PSUM
    aT_sb = nl.ndarray((M, K), dtype=np.float32, buffer=nl.sbuf)
    aT_sb[...] = nisa.nc_transpose(at)  # assigned into SBUF: a copy out of PSUM
    prod = nisa.nc_matmul(aT, bt)  # stationary read from PSUM: staged
    nl.store(out, value=prod)  # a PSUM value: staged
    nl.store(outT, value=aT_sb)
    return out, outT


def test_psum_operands_are_staged_through_sbuf():
    a, b = rand(64, 32), rand(32, 48)
    got, gotT = _transpose_chain(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(gotT, a.T)


# ---- nc_matmul PE tiling hints with `%` of loop variables; double-row mode ----


@nki.jit
def _batched_small_matmuls(g, h):
    B, K, M = g.shape
    _, _, N = h.shape
    out = nl.ndarray((B, M, N), dtype=np.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(B // 2):
        for j in nl.affine_range(2):
            gt = nl.load(g[i * 2 + j])
            ht = nl.load(h[i * 2 + j])
            r = nisa.nc_matmul(gt, ht, tile_position=((i % 2) * 32, (j % 2) * 32), tile_size=(32, 32))
            nl.store(out[i * 2 + j], value=r)
    return out


def test_nc_matmul_tile_position_from_loop_modulo():
    g, h = rand(4, 32, 16), rand(4, 32, 24)
    np.testing.assert_allclose(_batched_small_matmuls(g, h), np.matmul(g.transpose(0, 2, 1), h), rtol=1e-5, atol=1e-5)


def test_non_affine_value_used_as_an_index_reports_its_line():
    @nki.jit
    def bad(x):
        out = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            r = i % 2  # NON-AFFINE
            nl.store(out[i], value=nl.load(x[r]))
        return out

    with pytest.raises(nki.errors.KernelError, match=r"test_nki_compat_features\.py:\d+: `%` of a loop variable"):
        bad(rand(4, 8))


@nki.jit
def _double_row(a, b):
    P, _, M = a.shape
    _, _, N = b.shape
    out = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.load(a.view(a.dtype))
    bt = nl.load(b)
    nl.store(out, value=nisa.nc_matmul(at, bt, perf_mode="double_row_gen3"))
    return out


def test_nc_matmul_double_row_contracts_partition_and_pair_axes():
    a, b = rand(32, 2, 8, dtype=ml_dtypes.bfloat16), rand(32, 2, 16, dtype=ml_dtypes.bfloat16)
    want = np.einsum("kli,klj->ij", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(_double_row(a, b), want, rtol=1e-5, atol=1e-4)


def test_reinterpreting_view_is_refused():
    @nki.jit
    def bad(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(x.view(nl.int32)))
        return out

    with pytest.raises(KernelUnsupportedError, match="reinterpreting its bytes"):
        bad(rand(4, 4))


# ---- returning an nl.hbm (private HBM) tensor from a single-instance kernel ----


@nki.jit
def _private_hbm_result(x):
    out = nl.empty_like(x, buffer=nl.hbm)
    t = nl.load(x)
    nl.store(out, value=nl.multiply(t, t))
    return out


def test_private_hbm_return_is_the_result_for_one_instance():
    x = rand(8, 16)
    np.testing.assert_allclose(_private_hbm_result(x), x * x, rtol=1e-6)


def test_private_hbm_return_over_a_grid_is_an_error():
    with pytest.raises(nki.errors.KernelError, match="PRIVATE_HBM; kernel outputs must be nl.shared_hbm"):
        _private_hbm_result[2](rand(8, 16))


# ---- compat: torch_neuronx.xla_impl.ops.nki_jit (old torch scripts), CPU tensors ----


def test_compat_torch_neuronx_nki_jit_writes_output_arguments(tmp_path):
    import subprocess
    import sys
    import textwrap

    pytest.importorskip("torch")
    src = textwrap.dedent('''
        import goldtrace.nki.compat
        goldtrace.nki.compat.install()
        import torch
        import neuronxcc.nki.language as nl
        from torch_neuronx.xla_impl.ops import nki_jit

        def scale_rows(a, w, out):
            t = nl.load(a)
            wt = nl.load(w.reshape((1, w.shape[0])))
            nl.store(out, value=nl.multiply(t, wt.broadcast_to(a.shape)))

        k = nki_jit(scale_rows)
        a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
        w = torch.linspace(-1.0, 1.0, 8)
        out = torch.zeros(4, 8)
        k(a, w, out)
        assert torch.equal(out, a * w), (out, a * w)
        print("ok")
    ''')
    f = tmp_path / "t.py"
    f.write_text(src)
    r = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


# ---- direct allocation: placements of block-dimension tensors ----


@nki.jit
def _blocked_mod_alloc(x):
    # x: (4, 32, 16). Blocks of `buf` (one per i) sit back to back from byte 0;
    # `other` is placed right after them, so nothing overlaps.
    import goldtrace.nki.compiler as ncc

    B, P, F = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((B, nl.par_dim(P), F), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(B,)))
    other = nl.ndarray((nl.par_dim(P), F), dtype=x.dtype, buffer=ncc.sbuf.alloc(lambda idx, p, f: (0, B * F * 4)))
    for i in nl.affine_range(B):
        buf[i] = nl.load(x[i])
    other[...] = nl.full((P, F), -1.0, dtype=x.dtype)
    for i in nl.affine_range(B):
        nl.store(out[i], value=nl.add(buf[i], other))
    return out


def test_mod_alloc_blocks_back_to_back():
    x = rand(4, 32, 16)
    np.testing.assert_allclose(_blocked_mod_alloc(x), x - 1.0, rtol=1e-6)


@nki.jit
def _psum_blocks_in_one_bank(a, b):
    import goldtrace.nki.compiler as ncc

    out = nl.ndarray((2, 32, 256), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((2, nl.par_dim(32), 256), dtype=np.float32, buffer=ncc.psum.mod_alloc(base_bank=2, num_free_tiles=(2,)))
    at = nl.load(a)
    for j in nl.affine_range(2):
        bt = nl.load(b[j])
        acc[j] = nisa.nc_matmul(at, bt)
        nl.store(out[j], value=nl.copy(acc[j]))
    return out


def test_psum_mod_alloc_blocks_in_one_bank():
    a, b = rand(16, 32), rand(2, 16, 256)
    np.testing.assert_allclose(_psum_blocks_in_one_bank(a, b), np.stack([a.T @ b[0], a.T @ b[1]]), rtol=1e-5, atol=1e-5)


def test_psum_blocks_one_bank_each_but_smaller_than_a_bank_are_refused():
    import goldtrace.nki.compiler as ncc

    @nki.jit
    def k(a):
        out = nl.ndarray((32, 256), dtype=np.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((2, nl.par_dim(32), 256), dtype=np.float32, buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
        nl.store(out, value=nl.copy(acc[0]))
        return out

    with pytest.raises(KernelUnsupportedError, match=r"PSUM placement puts block \(1,\) .* byte 2048"):
        k(rand(16, 32))


def test_placements_with_partly_shared_or_scattered_blocks_are_refused():
    import goldtrace.nki.compiler as ncc

    def kernel_with(buffer):
        @nki.jit
        def k(x):
            out = nl.ndarray((4, 32, 16), dtype=x.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray((4, nl.par_dim(32), 16), dtype=x.dtype, buffer=buffer)
            for i in nl.affine_range(4):
                t[i] = nl.load(x[i])
                nl.store(out[i], value=t[i])
            return out
        return k

    x = rand(4, 32, 16)
    # four blocks in two slots (num_free_tiles=(2,)): blocks 0 and 2 would share memory
    with pytest.raises(KernelUnsupportedError, match=r"block \(2,\).*back to back"):
        kernel_with(ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))(x)
    # a callback scattering blocks
    with pytest.raises(KernelUnsupportedError, match="back to back"):
        kernel_with(ncc.sbuf.alloc(lambda idx, p, f: (0, 4096 * idx[0])))(x)
    # a callback placing them back to back is fine, and so is one place for all
    np.testing.assert_array_equal(kernel_with(ncc.sbuf.alloc(lambda idx, p, f: (0, 1024 + f * idx[0])))(x), x)
    np.testing.assert_array_equal(kernel_with(ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(1,)))(x), x)


@nki.jit
def _shared_block_clobber(x):
    # Both blocks of t sit in one place: writing block 1 overwrites block 0,
    # as on the device.
    import goldtrace.nki.compiler as ncc

    _, P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(P), F), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(1,)))
    t[0] = nl.load(x[0])
    t[1] = nl.load(x[1])
    nl.store(out, value=t[0])
    return out


def test_blocks_in_one_place_alias():
    x = rand(2, 16, 8)
    np.testing.assert_array_equal(_shared_block_clobber(x), x[1])


# ---- an accumulation group into a PSUM tile declared without a value starts at zero ----


@nki.jit
def _accumulate_into_unset_psum(a, b):
    # a: (KB, K, M), b: (KB, K, N)
    KB, K, M = a.shape
    N = b.shape[2]
    out = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=np.float32, buffer=nl.psum)
    for kb in nl.affine_range(KB):
        acc[...] += nisa.nc_matmul(nl.load(a[kb]), nl.load(b[kb]))
    nl.store(out, value=acc)
    return out


def test_matmul_accumulation_into_an_unset_psum_tile_starts_at_zero():
    a, b = rand(3, 32, 16), rand(3, 32, 64)
    np.testing.assert_allclose(_accumulate_into_unset_psum(a, b), np.einsum("bkm,bkn->mn", a, b), rtol=1e-5, atol=1e-5)


@nki.jit
def _vector_add_into_unset_psum(x):
    out = nl.ndarray(x.shape, dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray(x.shape, dtype=np.float32, buffer=nl.psum)
    acc[...] += nl.load(x)  # not a matmul: reads what PSUM held (nothing)
    nl.store(out, value=acc)
    return out


def test_vector_add_into_an_unset_psum_tile_reads_garbage():
    assert np.isnan(_vector_add_into_unset_psum(rand(8, 8))).all()


# ---- nc_matmul(is_transpose=True): stationary passes through transposed ----


@nki.jit
def _pe_transpose(x):
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=np.float32, buffer=nl.shared_hbm)
    ident = nl.shared_constant(np.identity(P, dtype=np.int8), dtype=x.dtype)
    it = nl.load(ident)
    t = nl.load(x)
    r = nl.ndarray((F, P), dtype=np.float32, buffer=nl.psum)
    r[...] = nisa.nc_matmul(t, it, is_transpose=True)
    nl.store(out, value=nl.copy(r))
    return out


def test_nc_matmul_is_transpose_transposes_the_stationary_operand():
    x = rand(32, 48, dtype=ml_dtypes.bfloat16)
    np.testing.assert_array_equal(_pe_transpose(x), x.astype(np.float32).T)


def test_nc_matmul_is_transpose_needs_a_square_moving_operand():
    @nki.jit
    def bad(x, y):
        out = nl.ndarray((48, 32), dtype=np.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(nisa.nc_matmul(nl.load(x), nl.load(y), is_transpose=True)))
        return out

    with pytest.raises(nki.errors.KernelError, match=r"is_transpose=True\) needs moving to be the \(32, 32\) identity"):
        bad(rand(32, 48), rand(32, 16))


# ---- PSUM tensors whose blocks together exceed a bank ----


@nki.jit
def _psum_blocks_over_a_bank(a, b):
    # acc: 2 blocks of (32, 512) f32 = 2 KiB each, 4 KiB in all
    out = nl.ndarray((2, 32, 512), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, nl.par_dim(32), 512), dtype=np.float32, buffer=nl.psum)
    scratch = nl.ndarray((2, nl.par_dim(32), 512), dtype=np.float32, buffer=nl.psum)
    at = nl.load(a)
    for j in nl.affine_range(2):
        acc[j] += nisa.nc_matmul(at, nl.load(b[j]))
        scratch[j] = nisa.nc_matmul(at, nl.load(b[j]))
        nl.store(out[j], value=nl.add(acc[j], nl.copy(scratch[j])))
    return out


def test_psum_block_tensors_larger_than_a_bank():
    a, b = rand(16, 32), rand(2, 16, 512)
    want = 2 * np.stack([a.T @ b[0], a.T @ b[1]])
    np.testing.assert_allclose(_psum_blocks_over_a_bank(a, b), want, rtol=1e-5, atol=1e-5)


def test_unknown_language_names_are_named_in_the_error():
    with pytest.raises(AttributeError, match=r"neuronxcc.nki.language.int1 is not part of the legacy"):
        nl.int1
    with pytest.raises(AttributeError, match=r"neuronxcc.nki.isa.core_barrier is not part of the legacy"):
        nisa.core_barrier
    assert not hasattr(nl, "int1") and getattr(nisa, "core_barrier", None) is None


@nki.jit
def _tile_plus_loop_var(x):
    out = nl.ndarray((3,) + x.shape, dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    for i in nl.affine_range(3):
        nl.store(out[i], value=t + i)  # a tile plus a loop variable, as a value
    return out


def test_tile_plus_loop_variable_is_a_value_outside_indices():
    x = rand(4, 8)
    np.testing.assert_allclose(_tile_plus_loop_var(x), np.stack([x + i for i in range(3)]), rtol=1e-6)


# ---- bn_stats under a mask: masked-off elements are left out of the statistics ----


@nki.jit
def _masked_bn_mean_var(x):
    P, F = x.shape
    out = nl.ndarray((P, 2), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    n = -(-F // 512)
    stats = nl.ndarray((P, 6 * n), dtype=np.float32)
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(512)[None, :]
    i_s = nl.arange(6)[None, :]
    for j in nl.affine_range(n):
        stats[i_p, j * 6 + i_s] = nisa.bn_stats(t[i_p, j * 512 + i_f], mask=(j * 512 + i_f < F), dtype=np.float32)
    nl.store(out, value=nisa.bn_aggr(stats))
    return out


def test_bn_stats_with_a_tail_mask_counts_only_active_elements():
    x = rand(16, 700) * 3 + 1
    got = _masked_bn_mean_var(x)
    np.testing.assert_allclose(got[:, 0], x.mean(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], x.var(axis=1), rtol=1e-4, atol=1e-5)


def test_compat_install_tolerates_stand_in_modules_without_a_spec(tmp_path):
    import subprocess
    import sys
    import textwrap

    src = textwrap.dedent('''
        import sys, types
        sys.modules["torch_neuronx"] = types.ModuleType("torch_neuronx")  # e.g. a test double
        import goldtrace.nki.compat
        assert goldtrace.nki.compat.install()
        import neuronxcc.nki.language as nl
        import torch_neuronx
        assert not hasattr(torch_neuronx, "nki_jit")  # the stand-in is kept, not replaced
        print("ok", nl.__name__)
    ''')
    f = tmp_path / "c.py"
    f.write_text(src)
    r = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok goldtrace.nki.language"


# ---- an on-chip tile returned from a one-instance kernel (API examples in simulation) ----


@nki.jit(mode="simulation")
def _clip_rows_returning_tiles(x, lo):
    t = nl.load(x)
    clipped = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    clipped[...] = nl.maximum(t, lo)
    peak = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
    peak[...] = nl.max(clipped, axis=[1], keepdims=True)
    return clipped, peak


def test_returned_sbuf_tiles_are_the_outputs_of_a_single_instance_kernel():
    x = rand(64, 96)
    clipped, peak = _clip_rows_returning_tiles(x, 0.25)
    np.testing.assert_array_equal(clipped, np.maximum(x, np.float32(0.25)))
    np.testing.assert_array_equal(peak, np.maximum(x, np.float32(0.25)).max(axis=1, keepdims=True))


@nki.jit
def _returns_sbuf_tile_from_each_instance(x):
    t = nl.load(x[nl.program_id(0) * 8 + nl.arange(8)[:, None], nl.arange(16)[None, :]])
    doubled = nl.multiply(t, 2.0)
    return doubled


def test_returned_sbuf_tile_outside_simulation_mode_names_its_declaration():
    import inspect

    line = inspect.getsourcelines(_returns_sbuf_tile_from_each_instance.func)[1]
    # without mode="simulation" (a device kernel) and from a multi-instance launch alike
    for launch in (_returns_sbuf_tile_from_each_instance, _returns_sbuf_tile_from_each_instance[2]):
        with pytest.raises(KernelError) as ei:
            launch(rand(16, 16))
        msg = str(ei.value)
        assert f"test_nki_compat_features.py:{line + 3}:" in msg, msg
        assert "SBUF" in msg and "shared_hbm" in msg, msg


# ---- nl.float8_e4m3 is the IEEE-style e4m3 (the legacy API's dtype(float8_e4m3)) ----


@nki.jit
def _to_fp8_e4m3(x):
    out = nl.ndarray(x.shape, dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, nl.copy(t, dtype=nl.float8_e4m3))
    return out


@nki.jit
def _to_fp8_named(x):
    out = nl.ndarray(x.shape, dtype="float8_e4m3", buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    return out


def test_float8_e4m3_is_the_ieee_style_format_with_infinities():
    assert np.dtype(nl.float8_e4m3) == np.dtype(ml_dtypes.float8_e4m3)
    x = np.array([[0.3, 17.0, 240.0, 250.0, 300.0, 448.0, -1e6, np.float32(np.finfo(np.float32).min)]] * 4, np.float32)
    want = x.astype(ml_dtypes.float8_e4m3)  # 240 is the largest finite value; beyond it rounds to infinity
    assert np.isinf(want[0, 4:].astype(np.float32)).all()
    for k in (_to_fp8_e4m3, _to_fp8_named):
        got = k(x)
        assert got.dtype == np.dtype(ml_dtypes.float8_e4m3)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
