package golden

import (
	"testing"
)

// scanScript writes rewritesScript-style cases (HLO, inputs, jax.jit's
// outputs on CPU, manifest) for cumulative reductions, every op of one
// dtype, length and axis in one program: XLA:CPU computes
// those past 16 elements as a tree of windows of 16 (ReduceWindowRewriter).
const scanScript = `
import jax, jax.numpy as jnp
lx = jax.lax
man = []

def case(name, f, *args):
    jf = jax.jit(f, keep_unused=True)
    with open(name + ".hlo", "w") as fh:
        fh.write(jf.lower(*args).as_text(dialect="hlo"))
    res = jf(*args)
    def meta(fn, a):
        a = np.asarray(a)
        a.tofile(fn)
        return {"File": fn, "Dtype": a.dtype.name, "Shape": list(a.shape)}
    man.append({"Name": name, "HLO": name + ".hlo", "Exact": True,
                "Inputs": [meta(f"{name}.in{i}", a) for i, a in enumerate(args)],
                "Outputs": [meta(f"{name}.out{i}", a) for i, a in enumerate(res)]})

def progs(axis, kind):
    return lambda x, p: progs1(axis, False, kind)(x, p) + progs1(axis, True, kind)(x, p)

def progs1(axis, rev, kind):
    sum_ = lambda x, p: lx.cumsum(x, axis, reverse=rev)
    prod = lambda x, p: lx.cumprod(p, axis, reverse=rev)
    mx = lambda x, p: lx.cummax(x, axis, reverse=rev)
    mn = lambda x, p: lx.cummin(x, axis, reverse=rev)
    lse = lambda x, p: lx.cumlogsumexp(x, axis, reverse=rev)
    fma = lambda x, p: lx.cumsum(x, axis, reverse=rev) * 0.5 + x
    fs = {"int": (sum_, prod, mx, mn), "f32": (sum_, prod, mx, mn, lse, fma),
          "narrow": (sum_, prod, mx, mn, lse)}[kind]
    return lambda x, p: tuple(f(x, p) for f in fs)

for tn, dt in (("f32", np.float32), ("bf16", bf16), ("f16", np.float16), ("s32", np.int32)):
    kind = {"f32": "f32", "s32": "int"}.get(tn, "narrow")
    if tn == "f32":
        lengths = ((1, (1, 15, 16, 17, 256, 257, 4096, 5000)), (0, (17, 257, 5000)))
    else:
        lengths = ((1, (17, 257, 5000)), (0, (257,)))
    for axis, ns in lengths:
        for n in ns:
            shape = (3, n) if axis == 1 else (n, 3)
            if kind == "int":
                x = rng.integers(-1000, 1000, shape).astype(dt)
                p = rng.integers(-3, 4, shape).astype(dt)
            else:
                x = rng.standard_normal(shape).astype(dt)
                p = (1 + 0.01 * rng.standard_normal(shape)).astype(dt)
            case(f"scan_{tn}_axis{axis}_{n}", progs(axis, kind), x, p)
with open("manifest.json", "w") as fh:
    json.dump(man, fh)
`

// TestXLAScanRewriteAgainstJAX: cumsum, cumprod, cummax, cummin and
// cumlogsumexp (and a cumsum feeding a multiply-add), forward and reverse,
// along the inner and the outer axis, over lengths around the tree's block
// of 16, bit for bit against jax.jit on CPU.
func TestXLAScanRewriteAgainstJAX(t *testing.T) {
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, scanScript)
	cases := readRewriteCases(t, dir)
	if len(cases) != 11+3*4 {
		t.Fatalf("the generator produced %d cases, want %d", len(cases), 11+3*4)
	}
	runRewriteCases(t, dir, cases)
}
