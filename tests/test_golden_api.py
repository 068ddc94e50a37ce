"""goldtrace.golden's options, the infergoldens console script and the demo,
checked against numpy and JAX."""

import json
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import goldtrace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ALL_REDUCE = """HloModule all_reduce, replica_count=4

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[3] parameter(0)
  id = u32[] replica-id()
  r = f32[3] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum
  ROOT t = (f32[3], u32[]) tuple(r, id)
}
"""


def mlp(x, w):
    return jax.nn.relu(x @ w).astype(jnp.bfloat16)


@pytest.fixture(scope="module")
def mlp_case():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 5)).astype(np.float32)
    return jax.jit(mlp).lower(x, w), x, w


def test_emulated_devices_exchange_data():
    shards = [np.full(3, 10.0**i, np.float32) for i in range(4)]
    out = goldtrace.golden(ALL_REDUCE, *shards, emulate_devices=-1)
    assert len(out.per_device) == 4
    for dev, (reduced, rid) in enumerate(out.per_device):
        group = [0, 1] if dev < 2 else [2, 3]
        np.testing.assert_array_equal(reduced, sum(shards[g] for g in group))
        assert rid == dev


def test_intermediates_and_output_dir(tmp_path, mlp_case):
    lowered, x, w = mlp_case
    out = goldtrace.golden(lowered, x, w, save_intermediates=True, output_dir=tmp_path)
    want = np.asarray(jax.jit(mlp)(x, w))
    assert out[0].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out[0], want)
    dots = [v for k, v in out.intermediates.items() if "dot" in k]
    assert dots and np.allclose(dots[0], x @ w, rtol=1e-5, atol=1e-5)
    written = goldtrace.load_npy(tmp_path / "value_output0.npy")
    assert written.dtype == ml_dtypes.bfloat16 and np.array_equal(written, want)
    index = json.load(open(tmp_path / "intermediates.json"))
    assert len(index) == len(out.intermediates)


def test_synthesized_inputs_are_deterministic(mlp_case):
    lowered = mlp_case[0]
    a, b = goldtrace.golden(lowered), goldtrace.golden(lowered)
    c = goldtrace.golden(lowered, seed=1)
    assert a[0].tobytes() == b[0].tobytes() and a[0].tobytes() != c[0].tobytes()


def test_upcast_computes_low_precision_in_f32(mlp_case):
    lowered, x, w = mlp_case
    (out,) = goldtrace.golden(lowered, x, w, upcast_fp32=True)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)


def test_unsafe_dtype_cast(mlp_case):
    lowered, x, w = mlp_case
    with pytest.raises(goldtrace.InvalidArgumentError, match="parameter 0"):
        goldtrace.golden(lowered, x.astype(np.float64), w)
    (out,) = goldtrace.golden(lowered, x.astype(np.float64), w, unsafe_dtype_cast=True)
    np.testing.assert_array_equal(out, np.asarray(jax.jit(mlp)(x, w)))


def test_console_script_matches_python(tmp_path, mlp_case):
    lowered, x, w = mlp_case
    module = tmp_path / "mlp.hlo"
    module.write_text(lowered.as_text(dialect="hlo"))
    goldtrace.save_npy(tmp_path / "x.npy", x)
    goldtrace.save_npy(tmp_path / "w.npy", w)
    out = tmp_path / "out"
    res = subprocess.run(["infergoldens", "-m", str(module), "-i", str(tmp_path / "x.npy"), "-i", str(tmp_path / "w.npy"),
                          "-O", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(goldtrace.load_npy(out / "value_output0.npy"), goldtrace.golden(lowered, x, w)[0])
    bad = subprocess.run(["infergoldens", "-m", str(module), "-i", str(tmp_path / "x.npy"), "-O", str(tmp_path / "o2")],
                         capture_output=True, text=True)
    assert bad.returncode == 4 and "wrong number of input" in bad.stderr
    assert not (tmp_path / "o2").exists() or not os.listdir(tmp_path / "o2")


def test_demo_runs():
    res = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo.py")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "identical to goldtrace.golden(): True" in res.stdout
    # The comparison with XLA:CPU must have run (jax is a test dependency) and
    # be close: the block's f32 dots are summed in another order by XLA:CPU
    # (YNNPACK), so elements differ by a few ulp of the output's scale
    # (measured 2.6e-07 relative, 24.8% bit-identical), never more.
    m = re.search(r"max \|diff\| (\S+) \(relative to the output's scale (\S+)\), "
                  r"bit-identical elements (\S+)%", res.stdout)
    assert m, "the demo did not compare with XLA:CPU:\n" + res.stdout
    assert float(m.group(2)) <= 4e-6, m.group(0)
    assert float(m.group(3)) >= 10.0, m.group(0)


def test_jax_compiled_object_is_accepted(mlp_case):
    lowered, x, w = mlp_case
    compiled = lowered.compile()
    module = goldtrace.hlo.load(compiled)
    assert module.kind == "text" and "fusion" in module.text
    np.testing.assert_array_equal(goldtrace.golden(compiled, x, w)[0], np.asarray(compiled(x, w)))


# A loop that overwrites its carried buffer (the entry parameter) row by row
# with dynamic-update-slice: the evaluator updates it in place.
INPLACE_LOOP = """HloModule inplace_loop

body {
  s = (s32[], f32[6,5]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  b = f32[6,5] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  zero = s32[] constant(0)
  f = f32[] convert(i1)
  row = f32[1,5] broadcast(f), dimensions={}
  u = f32[6,5] dynamic-update-slice(b, row, i, zero)
  ROOT t = (s32[], f32[6,5]) tuple(i1, u)
}

cond {
  s = (s32[], f32[6,5]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  p = f32[6,5] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[6,5]) tuple(z, p)
  w = (s32[], f32[6,5]) while(init), condition=cond, body=body
  r = f32[6,5] get-tuple-element(w), index=1
  flat = f32[30] reshape(p)
  ROOT out = (f32[6,5], f32[30], f32[6,5]) tuple(r, flat, p)
}
"""


def test_inputs_read_in_place_stay_untouched_and_outputs_outlive_them():
    # golden() reads the numpy inputs where they are (no copy): a loop that
    # updates its input's buffer in place must not write into the caller's
    # array, and outputs that are the input itself (or a view of it) must
    # hold the input's values, for an input that is 16-byte aligned (read
    # in place) and one that is not (copied).
    rng = np.random.default_rng(12)
    raw = np.zeros(6 * 5 + 4, np.float32)
    unaligned = raw[1:31].reshape(6, 5)
    assert unaligned.ctypes.data % 16 != 0
    for buf in (np.empty((6, 5), np.float32), unaligned):
        buf[...] = rng.standard_normal((6, 5)).astype(np.float32)
        before = buf.copy()
        got = goldtrace.golden(INPLACE_LOOP, buf)
        np.testing.assert_array_equal(buf, before)
        assert len(got) == 3
        np.testing.assert_array_equal(got[0], np.repeat(np.arange(1, 7, dtype=np.float32)[:, None], 5, 1))
        np.testing.assert_array_equal(got[1], before.reshape(-1))
        np.testing.assert_array_equal(got[2], before)
        inter = goldtrace.golden(INPLACE_LOOP, buf, save_intermediates=True).intermediates
        np.testing.assert_array_equal(inter["p"], before)
