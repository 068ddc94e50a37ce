package eval

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestYNNMathAgainstJax holds the YNNPACK kernels of ynn_math.go (scalar
// and, where this build has one, vector) to jax.jit bit for bit, over a
// sweep of f32 inputs that XLA:CPU feeds through a __ynn_fusion
// (testdata/gen_ynn_math.py; GOLDTRACE_YNNMATH_STRIDE sets the sweep's
// stride, 1024 by default). Any NaN matches any NaN: YNNPACK's AVX2 and
// AVX-512 kernels leave different payloads.
func TestYNNMathAgainstJax(t *testing.T) {
	if testing.Short() {
		t.Skip("generates references with jax")
	}
	stride := os.Getenv("GOLDTRACE_YNNMATH_STRIDE")
	if stride == "" {
		stride = "1024"
	}
	dir := genJaxCases(t, "gen_ynn_math.py", stride)
	type entry struct {
		Op string
		N  int
	}
	for _, c := range readManifest[entry](t, dir) {
		t.Run(c.Op, func(t *testing.T) {
			x := readRawF32(t, filepath.Join(dir, c.Op+".in"), c.N)
			want := readRawF32(t, filepath.Join(dir, c.Op+".out"), c.N)
			o := YNNOp{Op: c.Op, In: 1, C1: 1}
			f := o.unary()
			got := make([]float32, c.N)
			vec := make([]float32, c.N)
			for i := range x {
				got[i] = f(x[i])
			}
			k := ynnVectorF32(o, x, vec)
			copy(vec[k:], got[k:])
			for name, g := range map[string][]float32{"scalar": got, "vector": vec} {
				bad := 0
				for i := range x {
					if !sameF32(g[i], want[i]) {
						if bad < 5 {
							t.Errorf("%s %s(%g [%08x]) = %g [%08x], want %g [%08x]", name, c.Op, x[i], math.Float32bits(x[i]),
								g[i], math.Float32bits(g[i]), want[i], math.Float32bits(want[i]))
						}
						bad++
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d differ", name, bad, c.N)
				}
			}
		})
	}
}

func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

func readRawF32(t *testing.T, path string, n int) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4*n {
		t.Fatalf("%s: %d bytes, want %d", path, len(b), 4*n)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

// TestYNNMathVectorMatchesScalar holds the vector kernels, 16 lanes and 8
// (an AVX-512 host runs both), to the scalar ones bit for bit, NaN
// payloads and signs included: random bits of every exponent, random values
// in the ranges where each kernel switches branch, specials (signed zeros,
// infinities, quiet and signalling NaNs of either sign, subnormals, the
// branch thresholds and their neighbours) and the folded scalars (an input
// multiplier that makes subnormal operands, c0 and c1).
func TestYNNMathVectorMatchesScalar(t *testing.T) {
	x := make([]float32, 1<<16+5)
	for i := range x {
		x[i] = math.Float32frombits(uint32(i) * 65521 * 2654435761)
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1e-40, -1e-40, 88.5, -87.5, 80, 40, -40, 1, -1, 2, -2, 0.5, 1e-30, -1e-30, 1e30, 3e38, -3e38,
		math.Float32frombits(0x7fc00abc), math.Float32frombits(0xffc00abc), math.Float32frombits(0x7f800001),
		math.Float32frombits(0xff812345), math.Float32frombits(0x7fa00000), math.Float32frombits(1),
		math.Float32frombits(0x807fffff), math.Float32frombits(0x00800000), math.Float32frombits(0x80800000),
		ynnSqrt2, ynnSqrt2 / 2, ynnErfClamp, ynnErfSmall, ynnErfMid, -ynnErfClamp, -ynnErfSmall, -ynnErfMid,
		ynnExpLo, ynnExpHi, float32(math.Sqrt(-float64(ynnExpLo))), 1 - 0x1p-24, 1 + 0x1p-23, -0.5, -1 + 0x1p-24}
	for _, v := range specials[:len(specials):len(specials)] {
		b := math.Float32bits(v)
		specials = append(specials, math.Float32frombits(b+1), math.Float32frombits(b-1))
	}
	copy(x, specials)
	rng := rand.New(rand.NewSource(5))
	for _, r := range [][2]float32{{-5, 5}, {0, 4}, {-1, 3}, {0.6, 1.5}, {-1e-3, 1e-3}} {
		for range 4096 {
			x = append(x, r[0]+(r[1]-r[0])*rng.Float32())
		}
	}
	x = append(x, 1, 2, 3) // a tail past the last whole vector
	for _, o := range []YNNOp{
		{Op: "exp", In: 1, C1: 1}, {Op: "exp", In: -0.37, C1: 3},
		{Op: "expm1", In: 1, C1: 1}, {Op: "tanh", In: 1, C1: 1}, {Op: "tanh", In: 1, C0: 0.7, C1: 0.3},
		{Op: "logistic", In: 1, C1: 1}, {Op: "rsqrt", In: 1, C1: 1}, {Op: "negate", In: 1, C1: 1},
		{Op: "log", In: 1, C1: 1}, {Op: "log", In: 1e-30, C1: -0.5}, {Op: "log", In: -2, C1: 1},
		{Op: "log1p", In: 1, C1: 1}, {Op: "log1p", In: 1e-30, C1: 3}, {Op: "log1p", In: -1, C1: 1},
		{Op: "erf", In: 1, C1: 1}, {Op: "erf", In: 0.70710678, C0: 0.5, C1: 0.5}, {Op: "erf", In: -1e-35, C0: -1, C1: 2},
	} {
		f := o.unary()
		want := make([]float32, len(x))
		for i := range x {
			want[i] = f(x[i])
		}
		for _, wide := range []bool{true, false} {
			vec := make([]float32, len(x))
			k := ynnVectorF32Width(o, x, vec, wide)
			if k == 0 {
				t.Logf("%s (wide %v): no vector form in this build", o.Op, wide)
				continue
			}
			if k > len(x) || len(x)-k >= 16 {
				t.Fatalf("%+v (wide %v): vector form took %d of %d elements", o, wide, k, len(x))
			}
			bad := 0
			for i := range k {
				if math.Float32bits(vec[i]) != math.Float32bits(want[i]) {
					if bad < 5 {
						t.Errorf("%+v (wide %v) (%g [%08x]): vector %g [%08x], scalar %g [%08x]", o, wide, x[i], math.Float32bits(x[i]),
							vec[i], math.Float32bits(vec[i]), want[i], math.Float32bits(want[i]))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%+v (wide %v): %d of %d differ", o, wide, bad, k)
			}
		}
	}
}

// TestYNNBinaryVectorMatchesScalar holds the vector maximum and minimum, 16
// lanes and 8, to YNNOp.binary bit for bit: NaNs (either operand, payloads), infinities,
// signed zeros and subnormals (read as zeros of their sign) among random
// bits, odd lengths.
func TestYNNBinaryVectorMatchesScalar(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0xffc00001), 1e-40, -1e-40, math.Float32frombits(1), 1, -1, 3.5}
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{0, 1, 7, 8, 9, 63, 2048, 4099} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = math.Float32frombits(rng.Uint32()), math.Float32frombits(rng.Uint32())
			if rng.Intn(3) == 0 {
				a[i] = specials[rng.Intn(len(specials))]
			}
			if rng.Intn(3) == 0 {
				b[i] = specials[rng.Intn(len(specials))]
			}
		}
		for _, op := range []string{"maximum", "minimum"} {
			for _, wide := range []bool{true, false} {
				o := YNNOp{Op: op, In: 1, C1: 1}
				f := o.binary()
				got := make([]float32, n)
				k := ynnBinaryVectorF32Width(o, a, b, got, wide)
				if k%8 != 0 || k > n {
					t.Fatalf("%s n=%d: vector form took %d elements", op, n, k)
				}
				for i := range k {
					if w := f(a[i], b[i]); math.Float32bits(got[i]) != math.Float32bits(w) {
						t.Fatalf("%s (wide %v)(%08x, %08x): vector %08x, scalar %08x", op, wide, math.Float32bits(a[i]), math.Float32bits(b[i]),
							math.Float32bits(got[i]), math.Float32bits(w))
					}
				}
			}
		}
	}
}

// TestYNNOpConfigRoundTrip: the backend_config the golden driver writes is
// the op the evaluator reads.
func TestYNNOpConfigRoundTrip(t *testing.T) {
	o := YNNOp{Op: "tanh", In: 1, C0: 0.7, C1: -0.3}
	got, err := ParseYNNOp(o.Config())
	if err != nil || got != o {
		t.Fatalf("ParseYNNOp(%q) = %+v, %v; want %+v", o.Config(), got, err, o)
	}
	if _, err := ParseYNNOp("op=exp;in=zz"); err == nil {
		t.Error("a malformed config parsed")
	}
}

// TestYNNCallsFusedMatchOpByOp: YNNTarget calls inside a blocked group
// (fuseYNN) give the bits the op-by-op evaluation gives, for every op and a
// folded tanh, with random specials among the inputs.
func TestYNNCallsFusedMatchOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var ops []string
	for _, o := range []YNNOp{
		{Op: "exp", In: -0.5, C1: 2}, {Op: "expm1", In: 1, C1: 1}, {Op: "log", In: 1, C1: 1}, {Op: "log1p", In: 1, C1: 1},
		{Op: "tanh", In: 1, C0: 0.7, C1: 0.3}, {Op: "erf", In: 0.7, C0: 0.5, C1: 0.5}, {Op: "rsqrt", In: 1, C1: 1},
		{Op: "logistic", In: 1, C1: 1}, {Op: "negate", In: 1, C1: 1},
	} {
		ops = append(ops, o.Config())
	}
	var b strings.Builder
	b.WriteString("HloModule m\nENTRY e {\n  x = f32[3000] parameter(0)\n  y = f32[3000] parameter(1)\n  a = f32[3000] multiply(x, y)\n")
	prev := "a"
	for i, c := range ops {
		fmt.Fprintf(&b, "  u%d = f32[3000] custom-call(%s), custom_call_target=%q, backend_config=%q\n", i, prev, YNNTarget, c)
		fmt.Fprintf(&b, "  s%d = f32[3000] add(u%d, y)\n", i, i)
		prev = fmt.Sprintf("s%d", i)
	}
	fmt.Fprintf(&b, "  mx = f32[3000] custom-call(%s, x), custom_call_target=%q, backend_config=%q\n", prev, YNNTarget, YNNOp{Op: "maximum", In: 1, C1: 1}.Config())
	fmt.Fprintf(&b, "  ROOT mn = f32[3000] custom-call(mx, y), custom_call_target=%q, backend_config=%q\n}\n", YNNTarget, YNNOp{Op: "minimum", In: 1, C1: 1}.Config())
	if !fusedVsOpByOp(t, b.String(), randomF32(rng, []int64{3000}), randomF32(rng, []int64{3000})) {
		t.Fatal("nothing was fused")
	}
}
