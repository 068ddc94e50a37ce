"""Bad kernels: each is a clear goldtrace exception naming the kernel's own
file:line (and the rule), never a crash or a hang."""

import inspect
import re

import numpy as np
import pytest

import goldtrace
from goldtrace import nki
import goldtrace.nki.isa as nisa
import goldtrace.nki.language as nl

HERE = __file__


def line_of(fn, needle):
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if needle in line:
            return start + i
    raise AssertionError(f"{needle!r} not in {fn.__name__}")


def expect(exc_type, fn, needle, *args, rule=None, text=None):
    with pytest.raises(exc_type) as ei:
        fn(*args)
    msg = str(ei.value)
    assert isinstance(ei.value, goldtrace.GoldtraceError)
    want = f"{HERE}:{line_of(fn.func if hasattr(fn, 'func') else fn, needle)}"
    assert want in msg, f"expected {want} in: {msg}"
    if rule:
        assert rule in msg, msg
    if text:
        assert re.search(text, msg), msg
    return msg


A = np.ones((256, 512), np.float32)


def test_partition_dim_over_128():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)  # BAD
        nl.store(out, value=t)
        return out

    expect(nki.KernelError, k, "# BAD", A, text="128")


def test_out_of_bounds_index():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(3):
            t = nl.load(a[i * 128:(i + 1) * 128, :])  # BAD
            nl.store(out, value=t)
        return out

    expect(nki.KernelError, k, "# BAD", A, text="outside|oob")


@pytest.mark.parametrize("row", [1, 3, -2])
def test_constant_index_past_a_size_one_dimension(row):
    # A size-1 dimension indexed by a constant other than 0 (or -1) is out of
    # range; it must not quietly read element 0.
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a[row, :]))  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", np.ones((1, 64), np.float32), text=f"index {row} is out of range for dimension 0 of size 1")


def test_constant_index_past_the_end():
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a[300, :]))  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="index 300 is out of range for dimension 0 of size 256")


def test_symbolic_loop_variable_in_python_if():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            if i == 0:  # BAD
                nl.store(out, value=nl.load(a[0:128, :]))
        return out

    msg = expect(nki.SymbolicValueError, k, "# BAD", A)
    assert "static_range" in msg


def test_symbolic_loop_variable_as_list_index():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        sizes = [1, 2]
        for i in nl.affine_range(2):
            n = sizes[i]  # BAD
        return out

    expect(nki.SymbolicValueError, k, "# BAD", A)


def test_immutable_parameter_written():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a[0:128, :])
        nl.store(a[0:128, :], value=t)  # BAD
        nl.store(out, value=t)
        return out

    expect(nki.KernelError, k, "# BAD", A, text="immutable")


def test_unknown_dtype():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype="complex64", buffer=nl.shared_hbm)  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="dtype")


def test_float64_dtype_is_refused():
    @nki.jit
    def k(a):
        t = nl.zeros((128, 4), dtype=np.float64)  # BAD
        return a

    expect(nki.KernelError, k, "# BAD", A, text="float64")


def test_matmul_stationary_free_over_128():
    @nki.jit
    def k(a, b):
        out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.load(b)
        r = nisa.nc_matmul(x, y)  # BAD
        nl.store(out, value=nl.copy(r))
        return out

    expect(nki.KernelError, k, "# BAD", np.ones((128, 256), np.float32), np.ones((128, 512), np.float32), text="128")


def test_matmul_moving_free_over_512():
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.load(b)
        r = nisa.nc_matmul(x, y)  # BAD
        nl.store(out, value=nl.copy(r))
        return out

    expect(nki.KernelError, k, "# BAD", np.ones((128, 128), np.float32), np.ones((128, 1024), np.float32), text="512")


def test_matmul_operand_in_psum():
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        y = nl.load(b)
        p = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
        r = nisa.nc_matmul(p, y)  # BAD
        nl.store(out, value=nl.copy(r))
        return out

    expect(nki.KernelError, k, "# BAD", np.ones((128, 128), np.float32), np.ones((128, 512), np.float32), text="(?i)sbuf")


def test_psum_tile_over_2kib_per_partition():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)  # BAD
        nl.store(out, value=nl.copy(p))
        return out

    expect(nki.KernelError, k, "# BAD", A, text="(?i)psum|2 ?KiB|2048")


def test_reduction_over_partition_axis():
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a[0:128, :])
        s = nl.sum(t, axis=0)  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="partition")


def test_tensor_tensor_both_in_psum():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        q = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        r = nisa.tensor_tensor(p, q, np.add)  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="PSUM")


def test_slice_size_depending_on_loop_variable():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            t = nl.load(a[0:(i + 1) * 64, :])  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="constant")


def test_nested_kernel_with_grid():
    @nki.jit
    def inner(a):
        return a

    @nki.jit
    def k(a):
        return inner[2](a)  # BAD

    expect(nki.KernelError, k, "# BAD", A, text="grid")


def test_mixed_slicing_and_arange():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        t = nl.load(a[ip, 0:512])  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="mixed")


def test_store_to_sbuf_is_refused():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a[0:128, :])
        s = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
        nl.store(s, value=t)  # BAD
        return out

    expect(nki.KernelError, k, "# BAD", A, text="HBM")


def test_returning_an_sbuf_tile():
    @nki.jit
    def k(a):
        return nl.load(a[0:128, :])

    with pytest.raises(nki.KernelError, match="shared_hbm"):
        k(A)


def test_unhashable_constant_argument_is_named():
    @nki.jit
    def k(a, sizes):
        return a

    with pytest.raises(goldtrace.InvalidArgumentError, match="sizes"):
        k.dump_config(A, [1, 2])


def test_a_python_exception_in_the_body_propagates_and_the_next_trace_works():
    calls = []

    @nki.jit
    def k(a, boom):
        calls.append(1)
        for i in nl.affine_range(2):
            if boom:
                raise ValueError("user error inside a loop")
        out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a[0:128, :]))
        return out

    with pytest.raises(ValueError, match="user error"):
        k(A, True)
    np.testing.assert_array_equal(k(A, False), A[:128])
