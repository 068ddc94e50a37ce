"""Small HLO modules in the modular-flow layout (nc<i>/sg<j>/model.hlo) for the
batch runner's tests and benchmark, each with numpy's answer where it has one."""

import os

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16
_SHAPES = [(4,), (2, 3), (3, 5), (8, 8), (1, 7), (16,)]
_BINARY = {
    "add": np.add, "multiply": np.multiply, "subtract": np.subtract, "maximum": np.maximum, "minimum": np.minimum,
}


def _dims(shape):
    return ",".join(str(d) for d in shape)


def module(k):
    """The k-th module: (hlo text, [input arrays], numpy expected outputs or
    None). Every third module has no inputs (synthesized); the rest give them."""
    rng = np.random.default_rng(1000 + k)
    shape = _SHAPES[k % len(_SHAPES)]
    kind = k % 5
    d = _dims(shape)
    if kind in (0, 1):  # f32 or s32 binary elementwise
        op = list(_BINARY)[(k // 5) % len(_BINARY)]
        ty, npty = ("f32", np.float32) if kind == 0 else ("s32", np.int32)
        text = (f"HloModule m{k}\n\nENTRY main {{\n  a = {ty}[{d}] parameter(0)\n  b = {ty}[{d}] parameter(1)\n"
                f"  ROOT r = {ty}[{d}] {op}(a, b)\n}}\n")
        if npty is np.float32:
            xs = [rng.uniform(-4, 4, shape).astype(npty) for _ in range(2)]
        else:
            xs = [rng.integers(-1000, 1000, shape).astype(npty) for _ in range(2)]
        want = [_BINARY[op](xs[0], xs[1]).astype(npty)]
    elif kind == 2:  # bf16 add, rounded per op as XLA:CPU does
        text = (f"HloModule m{k}\n\nENTRY main {{\n  a = bf16[{d}] parameter(0)\n  b = bf16[{d}] parameter(1)\n"
                f"  ROOT r = bf16[{d}] add(a, b)\n}}\n")
        xs = [rng.uniform(-4, 4, shape).astype(BF16) for _ in range(2)]
        want = [(xs[0].astype(np.float32) + xs[1].astype(np.float32)).astype(BF16)]
    elif kind == 3:  # tuple of two results
        text = (f"HloModule m{k}\n\nENTRY main {{\n  a = f32[{d}] parameter(0)\n  n = f32[{d}] negate(a)\n"
                f"  m = f32[{d}] multiply(a, a)\n  ROOT t = (f32[{d}], f32[{d}]) tuple(n, m)\n}}\n")
        xs = [rng.uniform(-4, 4, shape).astype(np.float32)]
        want = [-xs[0], xs[0] * xs[0]]
    else:  # a reduction (no numpy answer: summation order is XLA's)
        text = (f"HloModule m{k}\n\nadd {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
                f"  ROOT s = f32[] add(x, y)\n}}\n\nENTRY main {{\n  a = f32[{d}] parameter(0)\n"
                f"  z = f32[] constant(0)\n  ROOT r = f32[] reduce(a, z), dimensions={{{','.join(str(i) for i in range(len(shape)))}}}, to_apply=add\n}}\n")
        xs = [rng.uniform(-4, 4, shape).astype(np.float32)]
        want = None
    if k % 3 == 2:
        return text, [], None
    return text, xs, want


def slow_module(k, iterations=3000):
    """A module whose while loop takes a noticeable time (for interrupting a run)."""
    return (f"HloModule slow{k}\n\ncond {{\n  p = (s32[], f32[64]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
            f"  n = s32[] constant({iterations})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\n"
            f"body {{\n  p = (s32[], f32[64]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
            f"  x = f32[64] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
            f"  c = f32[] constant({1 + k % 7}.5)\n  cb = f32[64] broadcast(c), dimensions={{}}\n  y = f32[64] multiply(x, cb)\n"
            f"  h = f32[] constant(0.5)\n  hb = f32[64] broadcast(h), dimensions={{}}\n  z = f32[64] multiply(y, hb)\n"
            f"  ROOT t = (s32[], f32[64]) tuple(j, z)\n}}\n\n"
            f"ENTRY main {{\n  a = f32[64] parameter(0)\n  zero = s32[] constant(0)\n  t0 = (s32[], f32[64]) tuple(zero, a)\n"
            f"  w = (s32[], f32[64]) while(t0), condition=cond, body=body\n  ROOT r = f32[64] get-tuple-element(w), index=1\n}}\n")


def write_tree(root, n, per_nc=60, make=module):
    """n modules as root/nc<i>/sg<j>/model.hlo with in<i>.npy (or, for every
    fourth, input<i>.npy) inputs; returns {job id: (dir, numpy expected or None)}."""
    from goldtrace import save_npy

    jobs = {}
    for k in range(n):
        rel = f"nc{k // per_nc:02d}/sg{k % per_nc:02d}"
        d = os.path.join(root, rel)
        os.makedirs(d, exist_ok=True)
        out = make(k)
        text, xs, want = out if isinstance(out, tuple) else (out, [], None)
        with open(os.path.join(d, "model.hlo"), "w") as f:
            f.write(text)
        prefix = "input" if k % 4 == 3 else "in"
        for i, x in enumerate(xs):
            save_npy(os.path.join(d, f"{prefix}{i}.npy"), x)
        jobs[rel] = (d, want)
    return jobs
