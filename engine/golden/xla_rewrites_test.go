package golden

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
	"goldtrace/internal/hostcpu"
)

// rewritesScript writes, per case, the unoptimized HLO text jax lowers a
// program to, the raw input bytes and the raw output bytes jax.jit computed
// on CPU, and a manifest. Cases marked exact exercise a rewrite of
// xla_rewrites.go and must agree bit for bit; the others document what is
// left, each with a bound the test enforces: at most Ulp units in the last
// place of the result, or (with Scale) of the scale array the generator
// writes, the magnitude of the terms whose cancellation magnifies an error
// (|x*y| + |z| for a multiply-add, |x| for gelu's x*(1+tanh(...))).
// GT_ONLY=s,t writes only the cases whose names contain s or t.
const rewritesScript = `
import os
import jax, jax.numpy as jnp
lx = jax.lax
f32, f16 = np.float32, np.float16
man = []
ONLY = os.environ.get("GT_ONLY", "")

def arr(shape, dt, pos=False):
    a = rng.standard_normal(shape)
    return (np.abs(a) + 0.1 if pos else a).astype(dt)

def case(name, exact, f, *args, rsqrt=False, ulp=0, scale=None):
    if not any(o in name for o in ONLY.split(",")):
        return
    jf = jax.jit(f)
    with open(name + ".hlo", "w") as fh:
        fh.write(jf.lower(*args).as_text(dialect="hlo"))
    res = jf(*args)
    res = res if isinstance(res, (tuple, list)) else (res,)
    def meta(fn, a):
        a = np.asarray(a)
        a.tofile(fn)
        return {"File": fn, "Dtype": a.dtype.name, "Shape": list(a.shape)}
    sc = []
    if scale is not None:
        with np.errstate(all="ignore"):
            s = scale(*[np.asarray(a, np.float64) for a in args])
        sc = [meta(f"{name}.scale{i}", np.asarray(v, np.float64)) for i, v in enumerate(s if isinstance(s, tuple) else (s,))]
    man.append({"Name": name, "HLO": name + ".hlo", "Exact": exact, "Rsqrt": rsqrt, "Ulp": ulp,
                "Inputs": [meta(f"{name}.in{i}", a) for i, a in enumerate(args)],
                "Outputs": [meta(f"{name}.out{i}", a) for i, a in enumerate(res)], "Scale": sc})

def every_finite(dt):
    x = np.arange(65536, dtype=np.uint16).view(dt)
    return x[np.isfinite(x.astype(f32))]

def adam(p, g, m, v, t=3.0, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return p - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps), m, v

def programs(tn, dt, skip={}, rsqrt=()):
    x, y, z = arr((8, 200), dt), arr((8, 200), dt, True), arr((8, 200), dt, True)
    p, g, m, v = arr((1000,), dt), arr((1000,), dt), arr((1000,), dt) / 10, arr((1000,), dt, True) / 100
    progs = {
        "mean": (lambda x: jnp.mean(x, axis=-1), x),
        "mean3": (lambda x: jnp.mean(x, axis=-1), x[:, :3]),
        "var": (lambda x: jnp.var(x, axis=-1), x),
        "div_const": (lambda x: x / 3.0, x),
        "div_const_array": (lambda x: x / jnp.asarray(np.linspace(1.5, 7.0, 200), dtype=x.dtype), x),
        "div_bcast": (lambda x, y: x / y[:, :1], x, y),
        # XLA:CPU multiplies by the reciprocal whatever else reads the
        # divisor (a softmax gradient squares the row sums).
        "div_bcast_reused": (lambda x, y: (lambda s: (x / s, s * s))(y.sum(-1, keepdims=True)), x, y),
        "div_bcast_returned": (lambda x, y: (lambda s: (x / s, s))(y[:, 1:2]), x, y),
        "div_div": (lambda x, y, z: x / (y / z), x, y, z),
        "divdiv": (lambda x, y, z: (x / y) / z, x, y, z),
        "div_rsqrt": (lambda x, y: x / lx.rsqrt(y), x, y),
        "softmax": (lambda x: jax.nn.softmax(x, axis=-1), x),
        "log_softmax": (lambda x: jax.nn.log_softmax(x, axis=-1), x),
        "gelu_tanh": (lambda x: jax.nn.gelu(x, approximate=True), x),
        "gelu_erf": (lambda x: jax.nn.gelu(x, approximate=False), x),
        "fma": (lambda x, y, z: x * y + z, x, y, z),
        "fms": (lambda x, y, z: z - x * y, x, y, z),
        "affine": (lambda x: x * 0.3 + 0.7, x),
        "adam": (adam, p, g, m, v),
        "div_sqrt": (lambda x, y: x / jnp.sqrt(y), x, y),
        "layernorm": (lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5), x),
        "attn_scale_f16": None,
    }
    for name, prog in progs.items():
        if prog is not None:
            ulp, scale = skip.get(name, (0, None))
            case(f"{name}_{tn}", name not in skip, prog[0], *prog[1:], rsqrt=name in rsqrt, ulp=ulp, scale=scale)

# XLA:CPU's rsqrt is the CPU's estimate refined by Newton steps (f64's on
# AVX-512 hosts; 1/sqrt elsewhere): matched only where eval.RsqrtMatchesXLA.
programs("f32", f32, rsqrt=("div_sqrt", "layernorm"))
# bf16 gelu_erf: erf is XLA:CPU's f32 kernel, not reproduced (a few f32 ulp);
# 1 + erf(x/sqrt2) cancels for x < 0, which can move the bf16 result by
# ulps of bf16 (measured 3 with this seed).
programs("bf16", bf16, skip={"gelu_erf": (4, None)})
programs("f16", f16)
for tn, dt in (("bf16", bf16), ("f16", f16)):
    case(f"every_{tn}_div3", True, lambda x: x / 3.0, every_finite(dt))
    case(f"every_{tn}_div7_bcast", True, lambda x: x / jnp.full((1,), 7.0, dt), every_finite(dt))

# Multiply-add contraction, f32.
x, y, z, w = (arr((8, 200), f32) for _ in range(4))
s = arr((8,), f32)
@jax.jit
def inner(a, b):
    return a * b
def shared(x, y, z, w):
    m = x * y
    return (m + z) * (m + w)
contraction = {
    "lhs_product_wins": (lambda x, y, z, w: x * y + z * w, x, y, z, w),
    "lhs_product_wins_sub": (lambda x, y, z, w: x * y - z * w, x, y, z, w),
    "product_minus": (lambda x, y, z: x * y - z, x, y, z),
    "through_transpose": (lambda x, y, z: (x * y).T + z.T, x, y, z),
    "through_slice": (lambda x, y, z: (x * y)[:, 10:50] + z[:, :40], x, y, z),
    "product_of_product": (lambda x, y, z, w: x * y * z + w, x, y, z, w),
    "nested_jit": (lambda x, y, z: inner(x, y) + z, x, y, z),
    "not_through_broadcast": (lambda x, s: x - (s * 0.3)[:, None], x, s),
    "not_shared_in_one_fusion": (shared, x, y, z, w),
    "not_when_also_output": (lambda x, y, z: (x * y, x * y + z), x, y, z),
    # Both operands products: LLVM's Reassociate orders the add's operands
    # by rank (loads in first-use order, +1 per op) and the lower-ranked
    # product is fused (ties: the left one).
    "rank_sqrt_left": (lambda x: jnp.sqrt(jnp.abs(x)) * x + x * x, x),
    "rank_sqrt_right": (lambda x: x * x + jnp.sqrt(jnp.abs(x)) * x, x),
    "rank_sqrt_y": (lambda x, y: jnp.sqrt(jnp.abs(x)) * x + y * y, x, y),
    "rank_sqrt_xy": (lambda x, y: jnp.sqrt(jnp.abs(x)) * y + x * y, x, y),
    "rank_inc": (lambda x: (x + 1) * x + x * x, x),
    "rank_inc2": (lambda x, y: (x + 1) * (y - 1) + x * y, x, y),
    "rank_inc2_swapped": (lambda x, y: x * y + (x + 1) * (y - 1), x, y),
    "rank_tie": (lambda x, y: (x + 1) * (y - 1) + (x - 1) * (y + 1), x, y),
    "rank_loads": (lambda x, y: y * y + x * x, x, y),
    "rank_mixed": (lambda x, y: x * (y - 1) + (x + 1) * y, x, y),
    "rank_mixed_swapped": (lambda x, y: (x + 1) * y + x * (y - 1), x, y),
    "rank_bcast": (lambda x, y, s: s[:, None] * (x + 1) + x * y, x, y, s),
    "rank_three": (lambda x, y, z: (x + z) * z + (y + y) * y, x, y, z),
    "rank_three_right": (lambda x, y, z: y * ((x + 1.5) - jnp.sqrt(jnp.abs(x))) + z * y, x, y, z),
    "rank_three_x": (lambda x, z: x * z + x * x, x, z),
    "not_through_concatenate": (lambda x, y, z, w: jnp.concatenate([x * y, z], 1)[:, 100:300] + w[:, :200], x, y, z, w),
}
for name, prog in contraction.items():
    case("fma_" + name, True, prog[0], *prog[1:])
# The same rank rule picks the product for f16 FMAs (AVX512-FP16 hosts).
for name, prog in contraction.items():
    if name.startswith("rank_"):
        case("fma_" + name + "_f16", True, prog[0], *[a.astype(f16) for a in prog[1:]])
# Left: a product read by two adds that XLA puts in two fusions is
# contracted into both; we contract only single-use products.
# Contracting or not moves a result by at most the product's rounding error
# (half an ulp of |x*y|) plus the final rounding: bounded in ulps of
# |x*y| + |z| (measured 555 ulp of the result where x*y and z cancel).
case("left_fma_two_fusions", False, lambda x, y, z, w: (x * y + z, x * y + w), x, y, z, w,
     ulp=2, scale=lambda x, y, z, w: (abs(x * y) + abs(z), abs(x * y) + abs(w)))

jax.config.update("jax_enable_x64", True)
# f64: exp, tanh and rsqrt are XLA:CPU's own kernels (reproduced; rsqrt where
# eval.RsqrtMatchesXLA), erf glibc's. Left within a few ulp: layernorm (the
# variance's sum of squares differs in the last bit for some rows; its rsqrt
# matches).
programs("f64", np.float64, skip={"layernorm": (3, None)}, rsqrt=("div_sqrt",))
with open("manifest.json", "w") as fh:
    json.dump(man, fh)
`

// rewriteCase is one manifest entry of rewritesScript.
type rewriteCase struct {
	Name  string
	HLO   string
	Exact bool
	// Rsqrt marks an Exact case that is exact only where the evaluator's
	// f32 rsqrt is XLA:CPU's (eval.RsqrtMatchesXLA).
	Rsqrt bool
	// Ulp bounds a case that is not exact: every element within Ulp units
	// in the last place of the result's type at the magnitude of the
	// result, or of Scale[k] (float64) when given.
	Ulp     int64
	Inputs  []rewriteArray
	Outputs []rewriteArray
	Scale   []rewriteArray
}

type rewriteArray struct {
	File  string
	Dtype string
	Shape []int64
}

func loadRewriteArray(t *testing.T, dir string, a rewriteArray) *tensor.Tensor {
	t.Helper()
	typ, ok := dtype.FromNumpy(a.Dtype)
	if !ok {
		t.Fatalf("%s: unknown dtype %q", a.File, a.Dtype)
	}
	data, err := os.ReadFile(filepath.Join(dir, a.File))
	if err != nil {
		t.Fatal(err)
	}
	x, err := tensor.FromBytes(typ, a.Shape, data)
	if err != nil {
		t.Fatalf("%s: %v", a.File, err)
	}
	return x
}

// bitMismatches counts the float elements whose bits differ (any NaN
// matches any NaN) and the largest distance in units in the last place.
func bitMismatches(got, want *tensor.Tensor) (n int, worstULP int64) {
	w := got.Type.Size()
	for i := 0; i+w <= len(got.Data) && i+w <= len(want.Data); i += w {
		a, aNaN := orderedBits(got.Data[i:i+w], got.Type)
		b, bNaN := orderedBits(want.Data[i:i+w], want.Type)
		if a == b || (aNaN && bNaN) {
			continue
		}
		n++
		d := a - b
		if d < 0 {
			d = -d
		}
		worstULP = max(worstULP, d)
	}
	return n, worstULP
}

// orderedBits maps a little-endian float's bits to an integer that orders
// like the value (so differences count ulps), and reports NaN.
func orderedBits(b []byte, t dtype.Type) (int64, bool) {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	bits := uint(len(b) * 8)
	sign := uint64(1) << (bits - 1)
	mag := u &^ sign
	var nan bool
	switch t {
	case dtype.F64:
		nan = math.IsNaN(math.Float64frombits(u))
	case dtype.F32:
		nan = math.IsNaN(float64(math.Float32frombits(uint32(u))))
	case dtype.F16:
		nan = mag > 0x7c00
	case dtype.BF16:
		nan = mag > 0x7f80
	}
	if u&sign != 0 {
		return -int64(mag), nan
	}
	return int64(mag), nan
}

// scaledMismatches counts the elements of got farther from want than ulp
// units in the last place of got's type at magnitude scale[i] (or |want[i]|
// when scale is nil), and returns the largest such distance in those units.
// NaN matches NaN; infinities must match exactly.
func scaledMismatches(got, want *tensor.Tensor, scale []float64, ulp int64) (n int, worst float64) {
	g, w := flatFloats(got), flatFloats(want)
	mant := map[dtype.Type]int{dtype.F64: 52, dtype.F32: 23, dtype.F16: 10, dtype.BF16: 7}[got.Type]
	for i := range w {
		if g[i] == w[i] || (math.IsNaN(g[i]) && math.IsNaN(w[i])) {
			continue
		}
		mag := math.Abs(w[i])
		if scale != nil {
			mag = math.Max(mag, scale[i])
		}
		_, e := math.Frexp(mag)
		unit := math.Ldexp(1, e-1-mant) // ulp at mag
		d := math.Abs(g[i]-w[i]) / unit
		if math.IsNaN(d) || math.IsInf(d, 0) || d > float64(ulp) {
			n++
		}
		if !(d <= worst) {
			worst = d
		}
	}
	return n, worst
}

func flatFloats(x *tensor.Tensor) []float64 {
	out := make([]float64, x.NumElements())
	dtype.DecodeF64(x.Type, x.Data, out)
	return out
}

// TestXLARewritesAgainstJAX runs jax programs whose results XLA:CPU's
// rewrites change (means, softmax, constant and broadcast divisions,
// multiply-adds, adam) from their unoptimized HLO and compares the goldens
// with jax.jit's results bit for bit, or within the bound each remaining
// difference carries. The f16 programs run twice: on this host, and with
// XLA:CPU limited to AVX2 (no f16 FMA, so no f16 contraction) against
// goldens computed as for such a host, and so do the multiply-adds (f32
// contraction, and which product is fused, must not depend on AVX-512).
func TestXLARewritesAgainstJAX(t *testing.T) {
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, rewritesScript)
	cases := readRewriteCases(t, dir)
	exact := 0
	for i, c := range cases {
		if c.Rsqrt && !eval.RsqrtMatchesXLA() {
			// The correctly rounded rsqrt is within 2 ulp of XLA's estimate
			// plus Newton steps (TestXLARsqrtKernel), one more for the product.
			cases[i].Exact, cases[i].Ulp = false, 3
		}
		if cases[i].Exact {
			exact++
		}
	}
	if exact < 60 || len(cases) < 80 {
		t.Fatalf("the generator produced %d cases, %d exact; want at least 80 and 60", len(cases), exact)
	}
	runRewriteCases(t, dir, cases)

	avx2 := t.TempDir()
	python(t, avx2, rewritesScript, "GT_ONLY=_f16,fma_", "XLA_FLAGS=--xla_cpu_max_isa=AVX2")
	f16 := readRewriteCases(t, avx2)
	if len(f16) < 20 {
		t.Fatalf("the AVX2 generator produced %d f16 cases, want at least 20", len(f16))
	}
	defer func(v bool) { contractF16 = v }(contractF16)
	contractF16 = false
	t.Run("avx2_host", func(t *testing.T) { runRewriteCases(t, avx2, f16) })
}

func readRewriteCases(t *testing.T, dir string) []rewriteCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []rewriteCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func runRewriteCases(t *testing.T, dir string, cases []rewriteCase) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if !c.Exact && c.Ulp <= 0 {
				t.Fatal("a case that is not exact needs a bound (ulp)")
			}
			l, err := LoadModule(filepath.Join(dir, c.HLO), ModuleAuto)
			if err != nil {
				t.Fatal(err)
			}
			var in []*tensor.Tensor
			for _, a := range c.Inputs {
				in = append(in, loadRewriteArray(t, dir, a))
			}
			res, err := Run(l.Module, in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outputs) != len(c.Outputs) {
				t.Fatalf("got %d outputs, want %d", len(res.Outputs), len(c.Outputs))
			}
			for k, o := range c.Outputs {
				want := loadRewriteArray(t, dir, o)
				got := res.Outputs[k]
				if got.Type != want.Type || !equalShape(got.Dims, want.Dims) {
					t.Fatalf("output %d: got %v%v, want %v%v", k, got.Type, got.Dims, want.Type, want.Dims)
				}
				n, worst := bitMismatches(got, want)
				if c.Exact {
					if n > 0 {
						t.Errorf("output %d: %d of %d elements differ from jax (up to %d ulp)", k, n, want.NumElements(), worst)
					}
					continue
				}
				var scale []float64
				if k < len(c.Scale) {
					scale = flatFloats(loadRewriteArray(t, dir, c.Scale[k]))
				}
				bad, worstScaled := scaledMismatches(got, want, scale, c.Ulp)
				if bad > 0 {
					t.Errorf("output %d: %d of %d elements beyond the bound of %d ulp (worst %.1f; %d differ, up to %d ulp of the result)",
						k, bad, want.NumElements(), c.Ulp, worstScaled, n, worst)
				} else {
					t.Logf("within its bound of %d ulp: output %d: %d of %d elements differ (worst %.2f ulp)", c.Ulp, k, n, want.NumElements(), worstScaled)
				}
			}
		})
	}
}

func equalShape(a, b []int64) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// TestXLARewritesStructure checks which rewrites fire on hand-written
// modules, without jax: the shapes of the rewritten graphs, not numbers.
func TestXLARewritesStructure(t *testing.T) {
	defer func(v bool) { contractF16 = v }(contractF16)
	contractF16 = false // a host without AVX512-FP16; see TestF16ContractionFollowsHost
	cases := []struct {
		name, body string
		want       []string // opcodes (custom-call as its target) that must appear
		absent     []string // opcodes that must not
	}{
		{"constant divisor", `
  x = f32[4] parameter(0)
  c = f32[] constant(200)
  b = f32[4] broadcast(c), dimensions={}
  ROOT d = f32[4] divide(x, b)`, []string{"multiply"}, []string{"divide"}},
		{"constant numerator and divisor fold exactly", `
  c = f32[] constant(1)
  k = f32[] constant(3)
  ROOT d = f32[] divide(c, k)`, []string{"divide"}, []string{"multiply"}},
		{"broadcast divisor read once", `
  x = f32[4,3] parameter(0)
  s = f32[4] parameter(1)
  b = f32[4,3] broadcast(s), dimensions={0}
  ROOT d = f32[4,3] divide(x, b)`, []string{"multiply", "divide"}, nil},
		{"broadcast divisor read twice too", `
  x = f32[4,3] parameter(0)
  s = f32[4] parameter(1)
  b = f32[4,3] broadcast(s), dimensions={0}
  d = f32[4,3] divide(x, b)
  ROOT t = (f32[4,3], f32[4]) tuple(d, s)`, []string{"multiply", "divide"}, nil},
		{"integer division stays", `
  x = s32[4] parameter(0)
  c = s32[] constant(3)
  b = s32[4] broadcast(c), dimensions={}
  ROOT d = s32[4] divide(x, b)`, []string{"divide"}, []string{"multiply"}},
		{"bf16 divides in f32", `
  x = bf16[4] parameter(0)
  c = bf16[] constant(3)
  b = bf16[4] broadcast(c), dimensions={}
  ROOT d = bf16[4] divide(x, b)`, []string{"convert", "multiply"}, []string{"divide"}},
		{"division by sqrt becomes rsqrt", `
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] sqrt(y)
  ROOT d = f32[4] divide(x, s)`, []string{"rsqrt", "multiply"}, []string{"divide", "sqrt"}},
		{"sqrt read twice stays", `
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] sqrt(y)
  d = f32[4] divide(x, s)
  ROOT a = f32[4] add(d, s)`, []string{"divide", "sqrt"}, []string{"rsqrt"}},
		{"bf16 division by sqrt stays", `
  x = bf16[4] parameter(0)
  y = bf16[4] parameter(1)
  s = bf16[4] sqrt(y)
  ROOT d = bf16[4] divide(x, s)`, []string{"divide", "sqrt"}, []string{"rsqrt"}},
		{"multiply-add", `
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  z = f32[4] parameter(2)
  m = f32[4] multiply(x, y)
  ROOT a = f32[4] add(m, z)`, []string{eval.FMATarget}, []string{"add", "multiply"}},
		{"f16 multiply-add stays", `
  x = f16[4] parameter(0)
  y = f16[4] parameter(1)
  m = f16[4] multiply(x, y)
  ROOT a = f16[4] add(m, x)`, []string{"add", "multiply"}, []string{eval.FMATarget}},
		{"no contraction through broadcast", `
  x = f32[4,3] parameter(0)
  s = f32[4] parameter(1)
  m = f32[4] multiply(s, s)
  b = f32[4,3] broadcast(m), dimensions={0}
  ROOT a = f32[4,3] add(x, b)`, []string{"add", "multiply"}, []string{eval.FMATarget}},
		{"call inlined, then contracted", `
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  p = f32[4] call(x, y), to_apply=mul
  ROOT a = f32[4] add(p, x)`, []string{eval.FMATarget}, []string{"call"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "HloModule m\n\nmul {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT m = f32[4] multiply(a, b)\n}\n\nENTRY main {" + tc.body + "\n}\n"
			m, err := hlo.ParseText([]byte(src), "test.hlo")
			if err != nil {
				t.Fatal(err)
			}
			rootName := m.Entry.Root.Name
			lm, err := legalize(m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, in := range lm.Entry.Instructions {
				op := in.Opcode
				if op == "custom-call" {
					op = in.CustomCallTarget
				}
				have[op] = true
			}
			for _, op := range tc.want {
				if !have[op] {
					t.Errorf("no %s after legalization: %v", op, opcodes(lm.Entry))
				}
			}
			for _, op := range tc.absent {
				if have[op] {
					t.Errorf("%s left after legalization: %v", op, opcodes(lm.Entry))
				}
			}
			if lm.Entry.Root.Name != rootName {
				t.Errorf("root renamed from %s to %s", rootName, lm.Entry.Root.Name)
			}
		})
	}
}

func opcodes(c *hlo.Computation) []string {
	var out []string
	for _, in := range c.Instructions {
		out = append(out, in.Name+"="+in.Opcode)
	}
	return out
}

// TestF16ContractionFollowsHost: f16 multiply-adds contract exactly when the
// host has AVX512-FP16 (contractF16 defaults to that), to one rounding.
func TestF16ContractionFollowsHost(t *testing.T) {
	if contractF16 != hostcpu.X86.AVX512FP16 {
		t.Fatalf("contractF16 = %v on a host with AVX512-FP16 = %v", contractF16, hostcpu.X86.AVX512FP16)
	}
	defer func(v bool) { contractF16 = v }(contractF16)
	src := "HloModule m\n\nENTRY main {\n  x = f16[1] parameter(0)\n  y = f16[1] parameter(1)\n  z = f16[1] parameter(2)\n" +
		"  m = f16[1] multiply(x, y)\n  ROOT a = f16[1] add(m, z)\n}\n"
	m, err := hlo.ParseText([]byte(src), "f16.hlo")
	if err != nil {
		t.Fatal(err)
	}
	// (1+2^-10)^2 = 1 + 2^-9 + 2^-20: rounded to f16 first it is 1 + 2^-9,
	// and adding -(1 + 2^-9) gives 0; fused, the 2^-20 survives.
	f16 := func(v float64) *tensor.Tensor {
		x := tensor.New(dtype.F16, []int64{1})
		dtype.EncodeF64(dtype.F16, []float64{v}, x.Data)
		return x
	}
	for _, on := range []bool{false, true} {
		contractF16 = on
		res, err := Run(m, []*tensor.Tensor{f16(1 + 0x1p-10), f16(1 + 0x1p-10), f16(-(1 + 0x1p-9))}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := flatFloats(res.Outputs[0])[0]
		want := 0.0
		if on {
			want = 0x1p-20
		}
		if got != want {
			t.Errorf("contractF16=%v: (1+2^-10)^2 - (1+2^-9) = %g, want %g", on, got, want)
		}
	}
}
