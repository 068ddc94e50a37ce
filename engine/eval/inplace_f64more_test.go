package eval

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// f64Specials are inputs every f64 kernel test mixes in.
var f64Specials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
	math.Float64frombits(0x7ff0000000000123), math.Float64frombits(0xfff8000000000456), // NaN payloads
	math.Float64frombits(1), -math.Float64frombits(0x000fffffffffffff), math.MaxFloat64, -math.MaxFloat64,
	-1, -1 + 0x1p-53, -0.5, 1, 1e300, 1e-300}

// randomF64Mix is random bits, normal values of several scales and the
// specials.
func randomF64Mix(rng *rand.Rand, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		switch rng.Intn(5) {
		case 0:
			xs[i] = math.Float64frombits(rng.Uint64())
		case 1:
			xs[i] = f64Specials[rng.Intn(len(f64Specials))]
		case 2:
			xs[i] = rng.NormFloat64() * 0.3
		default:
			xs[i] = rng.NormFloat64() * math.Pow(10, float64(rng.Intn(9)-4))
		}
	}
	return xs
}

// TestFMAF64VectorMatchesScalar: fmaF64Vector at every width the CPU runs
// is math.FMA bit for bit (NaN payloads included), odd lengths too.
func TestFMAF64VectorMatchesScalar(t *testing.T) {
	defer func(w int) { xlaF64Lanes = w }(xlaF64Lanes)
	rng := rand.New(rand.NewSource(3))
	for _, w := range xlaF64LaneWidths() {
		xlaF64Lanes = w
		for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 31, 2048, 4101} {
			a, b, c := randomF64Mix(rng, n), randomF64Mix(rng, n), randomF64Mix(rng, n)
			o := make([]float64, n)
			k := fmaF64Vector(a, b, c, o)
			if k > n || (w == 0) != (k == 0) && n >= w {
				t.Fatalf("width %d n=%d: vector form took %d", w, n, k)
			}
			for i := range k {
				if want := math.FMA(a[i], b[i], c[i]); math.Float64bits(o[i]) != math.Float64bits(want) {
					t.Fatalf("width %d: fma(%x, %x, %x) = %x, want %x", w, math.Float64bits(a[i]), math.Float64bits(b[i]),
						math.Float64bits(c[i]), math.Float64bits(o[i]), math.Float64bits(want))
				}
			}
		}
	}
}

// log1p64Reference is log1p64 as it was computed before the gathered libm
// call and the vector small branch: libm's log(x+1) on every element, then
// log1pSmall64 where |x| < log1p64Small.
func log1p64Reference(x, o []float64) {
	log1pLarge64(x, o)
	for i, v := range x {
		if math.Abs(v) < log1p64Small {
			o[i] = log1pSmall64(v)
		}
	}
}

// TestLog1pF64MatchesReference: log1p64 gives log1p64Reference's bits at
// every vector width, on both sides of the branch point, around -1, on
// specials and subnormals, for lengths across its 512-element chunks, and
// in place.
func TestLog1pF64MatchesReference(t *testing.T) {
	defer func(w int) { xlaF64Lanes = w }(xlaF64Lanes)
	rng := rand.New(rand.NewSource(5))
	edge := []float64{log1p64Small, -log1p64Small, math.Nextafter(log1p64Small, 0), math.Nextafter(-log1p64Small, 0),
		math.Nextafter(log1p64Small, 1), math.Nextafter(-log1p64Small, -1)}
	for _, w := range xlaF64LaneWidths() {
		xlaF64Lanes = w
		for _, n := range []int{0, 1, 5, 8, 13, 511, 512, 513, 2048, 3001} {
			x := randomF64Mix(rng, n)
			for i := range x {
				if rng.Intn(8) == 0 {
					x[i] = edge[rng.Intn(len(edge))]
				}
			}
			want, got := make([]float64, n), make([]float64, n)
			log1p64Reference(x, want)
			log1p64(x, got)
			inPlace := append([]float64(nil), x...)
			log1p64(inPlace, inPlace)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) || math.Float64bits(inPlace[i]) != math.Float64bits(want[i]) {
					t.Fatalf("width %d n=%d: log1p(%x) = %x (in place %x), want %x", w, n, math.Float64bits(x[i]),
						math.Float64bits(got[i]), math.Float64bits(inPlace[i]), math.Float64bits(want[i]))
				}
			}
		}
	}
}

// TestFusionF64FMAMatchesOpByOp: f64 DAGs with XLA's contracted
// multiply-adds (FMATarget) fuse into one group and give the op-by-op
// bits, the probe's exp(-x²)·log1p|x| + sqrt|x|/(1+x²) among them.
func TestFusionF64FMAMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(65))
	for _, dims := range [][]int64{{3000}, {37, 129}, {64, 64}, {2, 4100}} {
		dd := strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		sh := "f64" + dd
		src := fmt.Sprintf(`HloModule m
ENTRY e {
  x = %[1]s parameter(0)
  y = %[1]s parameter(1)
  neg = %[1]s negate(x)
  m3 = %[1]s multiply(neg, x)
  ex = %[1]s exponential(m3)
  ab = %[1]s abs(x)
  l1 = %[1]s log-plus-one(ab)
  sq = %[1]s sqrt(ab)
  one = f64[] constant(1)
  b1 = %[1]s broadcast(one), dimensions={}
  d = %[1]s custom-call(x, x, b1), custom_call_target="__goldtrace$xla_fma"
  dv = %[1]s divide(sq, d)
  f = %[1]s custom-call(ex, l1, dv), custom_call_target="__goldtrace$xla_fma"
  g = %[1]s custom-call(y, f, x), custom_call_target="__goldtrace$xla_fma"
  ROOT r = %[1]s subtract(g, y)
}
`, sh)
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatal(err)
		}
		plan := New(m, Options{}).fusionPlanFor(m.Entry)
		if plan == nil || len(plan.groups) != 1 {
			t.Fatalf("%v: want one group, plan %v", dims, plan)
		}
		if !fusedVsOpByOp(t, src, randomF64(rng, dims), randomF64(rng, dims)) {
			t.Fatalf("%v: not fused", dims)
		}
	}
}

// TestGroupInPlaceMatches: a group that writes its value into the storage
// of an operand whose last use it is (a dot's result, an op's), or runs on
// the dot's tiles as the GEMM makes them (dot_epilogue.go), gives the bits
// of the run that allocates, in shapes with ragged blocks and tiles, with
// NaNs, infinities and subnormals, and leaves an operand that is read
// again afterwards untouched.
func TestGroupInPlaceMatches(t *testing.T) {
	rng := rand.New(rand.NewSource(66))
	type tc struct {
		name    string
		body    string // ENTRY body over a, b (f32[M,K]) and c (f32[M,N]); d is the dot
		inPlace bool   // the plan lists d as an in-place operand
	}
	cases := []tc{
		{"pairwise", `  sa = f32[M,N] broadcast(ra), dimensions={0}
  sb = f32[M,N] broadcast(rb), dimensions={1}
  s = f32[M,N] add(sa, sb)
  t = f32[M,N] subtract(s, d)
  z = f32[] constant(0)
  zb = f32[M,N] broadcast(z), dimensions={}
  mx = f32[M,N] custom-call(t, zb), custom_call_target="__goldtrace$ynn", backend_config="op=maximum;in=3f800000;c0=0;c1=3f800000"
  ROOT q = f32[M,N] sqrt(mx)
`, true},
		{"root reads it", `  e = f32[M,N] exponential(c)
  t = f32[M,N] multiply(e, c)
  ROOT q = f32[M,N] subtract(t, d)
`, true},
		{"root fma", `  e = f32[M,N] tanh(c)
  ROOT q = f32[M,N] custom-call(d, e, d), custom_call_target="__goldtrace$xla_fma"
`, false},
		{"inner fma", `  e = f32[M,N] tanh(c)
  f = f32[M,N] custom-call(d, e, d), custom_call_target="__goldtrace$xla_fma"
  ROOT q = f32[M,N] select(p, f, d)
`, true},
		{"root ynn max", `  e = f32[M,N] tanh(c)
  ROOT q = f32[M,N] custom-call(d, e), custom_call_target="__goldtrace$ynn", backend_config="op=maximum;in=3f800000;c0=0;c1=3f800000"
`, true},
		{"root unary", `  ROOT q = f32[M,N] sqrt(d)
`, false},
		{"operand made after", `  x2 = f32[M,N] dot(c, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[M,N] add(d, x2)
  ROOT q = f32[M,N] multiply(t, t)
`, true},
		{"any gemm", `  d2 = f32[M,N] dot(c, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[M,N] subtract(d2, c)
  ROOT q = f32[M,N] sqrt(t)
`, true},
		{"read again", `  e = f32[M,N] exponential(c)
  t = f32[M,N] multiply(e, d)
  u = f32[M,N] sqrt(t)
  n = f32[M,N] negate(d)
  v = f32[M,N] dot(n, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT w = (f32[M,N], f32[M,N], f32[M,N]) tuple(u, v, d)
`, true},
	}
	for _, c := range cases {
		for _, mn := range [][2]int64{{128, 128}, {129, 257}, {256, 256}, {200, 256}, {130, 128}, {301, 512}} {
			M, N := mn[0], mn[1]
			body := strings.NewReplacer("M", fmt.Sprint(M), "N", fmt.Sprint(N)).Replace(c.body)
			if (c.name == "read again" || c.name == "operand made after" || c.name == "any gemm") && M != N {
				continue // (the second dot needs a square c)
			}
			src := fmt.Sprintf(`HloModule m
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[%[1]d,40] parameter(0)
  b = f32[%[2]d,40] parameter(1)
  c = f32[%[1]d,%[2]d] parameter(2)
  p = pred[%[1]d,%[2]d] compare(c, c), direction=LT
  z0 = f32[] constant(0)
  aa = f32[%[1]d,40] multiply(a, a)
  ra = f32[%[1]d] reduce(aa, z0), dimensions={1}, to_apply=sum
  bb = f32[%[2]d,40] multiply(b, b)
  rb = f32[%[2]d] reduce(bb, z0), dimensions={1}, to_apply=sum
  bt = f32[40,%[2]d] transpose(b), dimensions={1,0}
  d = f32[%[1]d,%[2]d] dot(a, bt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
%[3]s}
`, M, N, body)
			m, err := hlo.ParseText([]byte(src), "t.hlo")
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, src)
			}
			ev := New(m, Options{})
			fp := ev.framePlanFor(m.Entry)
			var listed bool
			for _, ps := range fp.ginplace {
				for _, p := range ps {
					name := m.Entry.Instructions[p].Name
					listed = listed || name == "d" || c.name == "any gemm" && name == "d2"
				}
			}
			if listed != c.inPlace {
				t.Fatalf("%s: d listed in place %v, want %v", c.name, listed, c.inPlace)
			}
			args := []Value{ArrayValue(randomF32(rng, []int64{M, 40})), ArrayValue(randomF32(rng, []int64{N, 40})),
				ArrayValue(randomF32(rng, []int64{M, N}))}
			runs := dotEpilogueRuns.Load()
			got, err := ev.Run(args)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			// The dot's epilogue runs where the dot takes YNNPACK's
			// pipelined GEMM (the SIMD build, several cores).
			ran := dotEpilogueRuns.Load() > runs
			// (Not every plan sums in uniform K blocks: 129x257 does not.)
			wantRan := ynnISA != 0 && ev.parallelism() > 1 && c.inPlace && c.name != "read again"
			if c.name == "any gemm" {
				wantRan = kernelFor[float32]().store != nil && !floatsOnBLAS && ev.parallelism() > 1
			}
			if ran != wantRan && (M == N || !wantRan) {
				t.Errorf("%s %dx%d: dot epilogue ran %v, want %v", c.name, M, N, ran, wantRan)
			}
			if testing.Verbose() {
				t.Logf("%s %dx%d: dot epilogue ran %v", c.name, M, N, ran)
			}
			inPlaceDisabled = true
			want, err := New(m, Options{}).Run(args)
			inPlaceDisabled = false
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			gl, wl := got.Leaves(), want.Leaves()
			for i := range wl {
				if gl[i].Type != dtype.F32 || string(gl[i].Data) != string(wl[i].Data) {
					t.Fatalf("%s %dx%d: output %d differs from the allocating run", c.name, M, N, i)
				}
			}
		}
	}
}

// TestSignBitF64VectorMatchesScalar: f64 abs and negate a vector at a time
// at every width the CPU runs are the bit operations of the scalar loops
// (NaN payloads, zeros, subnormals), odd lengths too.
func TestSignBitF64VectorMatchesScalar(t *testing.T) {
	defer func(w int) { binaryLanes = w }(binaryLanes)
	rng := rand.New(rand.NewSource(9))
	for _, w := range binaryLaneWidths() {
		binaryLanes = w
		for _, n := range []int{0, 1, 3, 4, 5, 8, 9, 2048, 2051} {
			x := randomF64Mix(rng, n)
			for _, abs := range []bool{true, false} {
				o := make([]float64, n)
				k := signBitF64Vector(abs, x, o)
				if k > n {
					t.Fatalf("width %d: took %d of %d", w, k, n)
				}
				for i := range k {
					want := math.Float64bits(x[i]) ^ 1<<63
					if abs {
						want = math.Float64bits(x[i]) &^ (1 << 63)
					}
					if math.Float64bits(o[i]) != want {
						t.Fatalf("width %d abs=%v: %x -> %x, want %x", w, abs, math.Float64bits(x[i]), math.Float64bits(o[i]), want)
					}
				}
			}
		}
	}
}
