package eval

// Compiled scalar programs against the interpreter path. The reference is the
// tensor path (each op evaluated by its registered tensor kernel on rank-0
// tensors through Evaluator.Call), which the jax differential suites test;
// the compiled program must agree with it bit for bit.

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// scalarTestTypes are every array element type.
func scalarTestTypes() []dtype.Type {
	var out []dtype.Type
	for _, t := range dtype.All() {
		if t.IsArray() {
			out = append(out, t)
		}
	}
	return out
}

// randomTensor fills n elements of t with random storage bits mixed with the
// type's special values (zeros, ±1, infinities, NaN, subnormals, extremes).
func randomTensor(r *rand.Rand, t dtype.Type, n int) *tensor.Tensor {
	x := tensor.New(t, []int64{int64(n)})
	r.Read(x.Data)
	size := t.Size()
	var specials []uint64
	switch {
	case t.IsFloat():
		for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 2, 3, -2.5, math.Inf(1), math.Inf(-1), math.NaN(),
			1e-40, -1e-41, 1e-310, 6.1e-5, 3e-8, 65504, 3e38, -3e38, 1e300, 448, 57344, 0.1} {
			specials = append(specials, dtype.FromF64(t, f))
		}
	case t.IsComplex():
		half := size / 2
		for _, f := range []float64{0, 1, -1, math.Inf(1), math.NaN(), 1e-40, 1e-310} {
			b := math.Float64bits(f)
			if half == 4 {
				b = uint64(math.Float32bits(float32(f)))
			}
			specials = append(specials, b, b<<uint(8*half%64)) // real part only / imag part only (c64)
		}
	case t == dtype.Pred:
		for i := range x.Data {
			x.Data[i] &= 1
		}
	default:
		w := t.Bits()
		specials = []uint64{0, 1, widthMask(w), widthMask(w) >> 1, 1 << uint(w-1), 2, 3}
	}
	for i := 0; i < n; i += 2 {
		if len(specials) == 0 {
			break
		}
		b := specials[r.Intn(len(specials))]
		if t.IsComplex() {
			putBits(x.Data[i*size:], size/2, b)
			continue
		}
		putBits(x.Data[i*size:], size, b)
	}
	if t.IsSubByte() {
		for i := range x.Data {
			x.Data[i] &= byte(widthMask(t.Bits()))
		}
	}
	return x
}

// evalBoth evaluates src on args with scalar programs and with the
// interpreter; it fails the test when exactly one errors or the results differ.
// It reports whether the reference succeeded.
func evalBoth(t *testing.T, src string, args ...*tensor.Tensor) bool {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "scalar_test.hlo")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	vals := make([]Value, len(args))
	for i, a := range args {
		vals[i] = ArrayValue(a)
	}
	scalarOff = true
	want, werr := Evaluate(m, vals, Options{})
	scalarOff = false
	got, gerr := Evaluate(m, vals, Options{})
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("interpreter error %v, compiled error %v\n%s", werr, gerr, src)
	}
	if werr != nil {
		return false
	}
	wl, gl := want.Leaves(), got.Leaves()
	if len(wl) != len(gl) {
		t.Fatalf("%d results, want %d", len(gl), len(wl))
	}
	for i := range wl {
		if wl[i].Type != gl[i].Type || !equalDims(wl[i].Dims, gl[i].Dims) {
			t.Fatalf("result %d is %v, want %v", i, gl[i], wl[i])
		}
		if !bytes.Equal(wl[i].Data, gl[i].Data) {
			size := wl[i].Type.Size()
			for e := 0; e < len(wl[i].Data)/size; e++ {
				w, g := wl[i].Data[e*size:(e+1)*size], gl[i].Data[e*size:(e+1)*size]
				if !bytes.Equal(w, g) {
					var in []string
					for _, a := range args {
						s := a.Type.Size()
						in = append(in, fmt.Sprintf("%x", a.Data[e*s:(e+1)*s]))
					}
					t.Fatalf("result %d element %d: compiled %x, interpreter %x (inputs %v)\n%s", i, e, g, w, in, src)
				}
			}
		}
	}
	return true
}

// mapProgram is a module mapping a scalar computation whose body is given
// over n-element operands of types ins, into type out.
func mapProgram(ins []dtype.Type, out dtype.Type, body string, n int) string {
	var sb strings.Builder
	sb.WriteString("HloModule m\n\ncomp {\n")
	for i, t := range ins {
		fmt.Fprintf(&sb, "  p%d = %v[] parameter(%d)\n", i, t, i)
	}
	sb.WriteString(body)
	sb.WriteString("}\n\nENTRY e {\n")
	var names []string
	for i, t := range ins {
		fmt.Fprintf(&sb, "  a%d = %v[%d] parameter(%d)\n", i, t, n, i)
		names = append(names, fmt.Sprintf("a%d", i))
	}
	fmt.Fprintf(&sb, "  ROOT m = %v[%d] map(%s), dimensions={0}, to_apply=comp\n}\n", out, n, strings.Join(names, ", "))
	return sb.String()
}

// checkCompiles fails unless the map computation of src compiles.
func checkCompiles(t *testing.T, src string) {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "scalar_test.hlo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Computations {
		if c.Name == "comp" {
			if _, err := buildScalar(c); err != nil {
				t.Fatalf("does not compile: %v\n%s", err, src)
			}
		}
	}
}

// unaryResult is the result type of a unary op on t.
func unaryResult(op string, t dtype.Type) dtype.Type {
	switch {
	case op == "is-finite":
		return dtype.Pred
	case t == dtype.C64 && (op == "abs" || op == "real" || op == "imag"):
		return dtype.F32
	case t == dtype.C128 && (op == "abs" || op == "real" || op == "imag"):
		return dtype.F64
	}
	return t
}

func TestScalarUnaryBinaryOps(t *testing.T) {
	const n = 512
	r := rand.New(rand.NewSource(1))
	compiled := 0
	for _, typ := range scalarTestTypes() {
		x, y := randomTensor(r, typ, n), randomTensor(r, typ, n)
		for _, op := range unaryOpcodes {
			src := mapProgram([]dtype.Type{typ}, unaryResult(op, typ),
				fmt.Sprintf("  ROOT r = %v[] %s(p0)\n", unaryResult(op, typ), op), n)
			if evalBoth(t, src, x) {
				checkCompiles(t, src)
				compiled++
			}
		}
		for _, op := range binaryOpcodes {
			src := mapProgram([]dtype.Type{typ, typ}, typ, fmt.Sprintf("  ROOT r = %v[] %s(p0, p1)\n", typ, op), n)
			if evalBoth(t, src, x, y) {
				checkCompiles(t, src)
				compiled++
			}
		}
	}
	// Every type has at least add, so a low count means a regression in the
	// harness, not in the programs.
	if compiled < 400 {
		t.Fatalf("only %d op/type combinations ran", compiled)
	}
}

func TestScalarCompareSelectClamp(t *testing.T) {
	const n = 512
	r := rand.New(rand.NewSource(2))
	ran := 0
	for _, typ := range scalarTestTypes() {
		x, y := randomTensor(r, typ, n), randomTensor(r, typ, n)
		// Equal operands half the time, so EQ/LE/GE see true cases.
		size := typ.Size()
		for i := 1; i < n; i += 2 {
			copy(y.Data[i*size:(i+1)*size], x.Data[i*size:(i+1)*size])
		}
		for _, dir := range []string{"EQ", "NE", "LT", "LE", "GT", "GE"} {
			for _, ct := range []string{"", ", type=FLOAT", ", type=TOTALORDER", ", type=SIGNED", ", type=UNSIGNED"} {
				src := mapProgram([]dtype.Type{typ, typ}, dtype.Pred,
					fmt.Sprintf("  ROOT r = pred[] compare(p0, p1), direction=%s%s\n", dir, ct), n)
				if evalBoth(t, src, x, y) {
					checkCompiles(t, src)
					ran++
				}
			}
		}
		p := randomTensor(r, dtype.Pred, n)
		src := mapProgram([]dtype.Type{dtype.Pred, typ, typ}, typ, fmt.Sprintf("  ROOT r = %v[] select(p0, p1, p2)\n", typ), n)
		if evalBoth(t, src, p, x, y) {
			checkCompiles(t, src)
			ran++
		}
		z := randomTensor(r, typ, n)
		src = mapProgram([]dtype.Type{typ, typ, typ}, typ, fmt.Sprintf("  ROOT r = %v[] clamp(p0, p1, p2)\n", typ), n)
		if evalBoth(t, src, x, y, z) {
			checkCompiles(t, src)
			ran++
		}
	}
	if ran < 500 {
		t.Fatalf("only %d cases ran", ran)
	}
}

func TestScalarConverts(t *testing.T) {
	const n = 256
	r := rand.New(rand.NewSource(3))
	ran := 0
	types := scalarTestTypes()
	for _, from := range types {
		x := randomTensor(r, from, n)
		for _, to := range types {
			src := mapProgram([]dtype.Type{from}, to, fmt.Sprintf("  ROOT r = %v[] convert(p0)\n", to), n)
			if evalBoth(t, src, x) {
				checkCompiles(t, src)
				ran++
			}
			if to.Bits() == from.Bits() && to.Size() == from.Size() {
				src := mapProgram([]dtype.Type{from}, to, fmt.Sprintf("  ROOT r = %v[] bitcast-convert(p0)\n", to), n)
				if evalBoth(t, src, x) {
					checkCompiles(t, src)
					ran++
				}
			}
		}
		if from.IsFloat() {
			src := mapProgram([]dtype.Type{from}, from, fmt.Sprintf("  ROOT r = %v[] reduce-precision(p0), exponent_bits=5, mantissa_bits=2\n", from), n)
			if evalBoth(t, src, x) {
				checkCompiles(t, src)
				ran++
			}
		}
	}
	y := randomTensor(r, dtype.F32, n)
	src := mapProgram([]dtype.Type{dtype.F32, dtype.F32}, dtype.C64, "  ROOT r = c64[] complex(p0, p1)\n", n)
	if evalBoth(t, src, randomTensor(r, dtype.F32, n), y) {
		ran++
	}
	if ran < 400 {
		t.Fatalf("only %d cases ran", ran)
	}
}

// TestScalarChains runs multi-instruction computations: constants, shared
// operands, narrow floats rounding per op, tuples and get-tuple-element.
func TestScalarChains(t *testing.T) {
	const n = 1024
	r := rand.New(rand.NewSource(4))
	for _, typ := range []dtype.Type{dtype.F32, dtype.BF16, dtype.F16, dtype.F64, dtype.F8E4M3FN, dtype.S32, dtype.U8, dtype.S4} {
		body := fmt.Sprintf(`  c = %[1]v[] constant(3)
  m = %[1]v[] multiply(p0, p1)
  a = %[1]v[] add(m, c)
  s = %[1]v[] subtract(a, p0)
  t = (%[1]v[], %[1]v[]) tuple(s, m)
  g0 = %[1]v[] get-tuple-element(t), index=0
  g1 = %[1]v[] get-tuple-element(t), index=1
  mx = %[1]v[] maximum(g0, g1)
  lt = pred[] compare(mx, p1), direction=LT
  ROOT r = %[1]v[] select(lt, mx, c)
`, typ)
		src := mapProgram([]dtype.Type{typ, typ}, typ, body, n)
		if !evalBoth(t, src, randomTensor(r, typ, n), randomTensor(r, typ, n)) {
			t.Fatalf("%v chain did not evaluate", typ)
		}
		checkCompiles(t, src)
	}
}

// TestScalarCallers checks each op that applies a computation per element:
// variadic reduce (argmax), reduce-window with a non-trivial reducer, a
// multi-operand sort comparator, scatter combiners, select-and-scatter.
func TestScalarCallers(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	x := randomTensor(r, dtype.F32, 64*32)
	x.Dims = []int64{64, 32}
	if !evalBoth(t, strings.NewReplacer("64,1024", "64,32", "[1024]", "[32]").Replace(argmaxHLO), x) {
		t.Fatal("argmax did not evaluate")
	}
	if !evalBoth(t, strings.ReplaceAll(jnpSortHLO, "64,1024", "64,32"), x) {
		t.Fatal("jnp.sort did not evaluate")
	}
	cases := []struct {
		name string
		src  string
		args []*tensor.Tensor
	}{
		{"reduce_window_sumsq", `HloModule m
r {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  m = bf16[] multiply(b, b)
  ROOT s = bf16[] add(a, m)
}
ENTRY e {
  x = bf16[8,16] parameter(0)
  z = bf16[] constant(0)
  ROOT w = bf16[4,8] reduce-window(x, z), window={size=2x3 stride=2x2 pad=0_0x1_1}, to_apply=r
}
`, []*tensor.Tensor{randomShaped(r, dtype.BF16, 8, 16)}},
		{"reduce_swap_tuple", `HloModule m
r {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  x = s32[] xor(a, c)
  ROOT t = (s32[], s32[]) tuple(b, x)
}
ENTRY e {
  x = s32[16,9] parameter(0)
  y = s32[16,9] parameter(1)
  z = s32[] constant(7)
  ROOT w = (s32[16], s32[16]) reduce(x, y, z, z), dimensions={1}, to_apply=r
}
`, []*tensor.Tensor{randomShaped(r, dtype.S32, 16, 9), randomShaped(r, dtype.S32, 16, 9)}},
		{"sort_two_keys", `HloModule m
c {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  c = f16[] parameter(2)
  d = f16[] parameter(3)
  lt = pred[] compare(a, b), direction=LT
  eq = pred[] compare(a, b), direction=EQ
  gt = pred[] compare(c, d), direction=GT, type=TOTALORDER
  both = pred[] and(eq, gt)
  ROOT r = pred[] or(lt, both)
}
ENTRY e {
  x = s8[5,40] parameter(0)
  y = f16[5,40] parameter(1)
  ROOT s = (s8[5,40], f16[5,40]) sort(x, y), dimensions={1}, is_stable=true, to_apply=c
}
`, []*tensor.Tensor{smallInts(r, dtype.S8, 5, 5, 40), randomShaped(r, dtype.F16, 5, 40)}},
		{"sort_desc_const_step", `HloModule m
c {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  one = f32[] constant(1)
  two = f32[] constant(2)
  k = f32[] add(one, two)
  sa = f32[] multiply(a, k)
  sb = f32[] multiply(b, k)
  ROOT r = pred[] compare(sa, sb), direction=GT
}
ENTRY e {
  x = f32[3,50] parameter(0)
  ROOT s = f32[3,50] sort(x), dimensions={0}, to_apply=c
}
`, []*tensor.Tensor{randomShaped(r, dtype.F32, 3, 50)}},
		{"reduce_complex_mul", `HloModule m
r {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT m = c64[] multiply(a, b)
}
ENTRY e {
  x = c64[6,5] parameter(0)
  o = c64[] constant((1, 0))
  ROOT w = c64[6] reduce(x, o), dimensions={1}, to_apply=r
}
`, []*tensor.Tensor{randomShaped(r, dtype.C64, 6, 5)}},
		{"map_u4_shift", `HloModule m
c {
  a = u4[] parameter(0)
  b = u4[] parameter(1)
  s = u4[] shift-right-arithmetic(a, b)
  ROOT p = u4[] popcnt(s)
}
ENTRY e {
  x = u4[64] parameter(0)
  y = u4[64] parameter(1)
  ROOT m = u4[64] map(x, y), dimensions={0}, to_apply=c
}
`, []*tensor.Tensor{randomShaped(r, dtype.U4, 64), randomShaped(r, dtype.U4, 64)}},
		{"scatter_combiner", `HloModule m
c {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] subtract(m, b)
}
ENTRY e {
  x = f32[10,3] parameter(0)
  i = s32[6,1] parameter(1)
  u = f32[6,3] parameter(2)
  ROOT s = f32[10,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=c
}
`, []*tensor.Tensor{randomShaped(r, dtype.F32, 10, 3), smallInts(r, dtype.S32, 12, 6, 1), randomShaped(r, dtype.F32, 6, 3)}},
		{"select_and_scatter", `HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,8] parameter(0)
  s = f32[4,4] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[8,8] select-and-scatter(x, s, z), window={size=3x3 stride=2x2 pad=0_1x0_1}, select=ge, scatter=add
}
`, []*tensor.Tensor{randomShaped(r, dtype.F32, 8, 8), randomShaped(r, dtype.F32, 4, 4)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !evalBoth(t, c.src, c.args...) {
				t.Fatal("the interpreter rejected the program")
			}
		})
	}
}

// randomShaped is randomTensor with the given dims.
func randomShaped(r *rand.Rand, typ dtype.Type, dims ...int64) *tensor.Tensor {
	x := randomTensor(r, typ, int(tensor.NumElements(dims)))
	x.Dims = dims
	return x
}

// smallInts is an integer tensor of values in [-2, hi) (some out of range
// for scatter indices, some repeated for sort ties).
func smallInts(r *rand.Rand, typ dtype.Type, hi int, dims ...int64) *tensor.Tensor {
	x := tensor.New(typ, dims)
	vals := make([]int64, x.NumElements())
	for i := range vals {
		vals[i] = int64(r.Intn(hi+2) - 2)
	}
	copy(x.Data, newFromI64(typ, dims, vals).Data)
	return x
}

// TestScalarUnsupportedFallsBack checks that computations with anything a
// program cannot run are not compiled.
func TestScalarUnsupportedFallsBack(t *testing.T) {
	for _, body := range []string{
		"  ROOT r = f32[2] broadcast(p0), dimensions={}\n",
		"  ROOT r = f32[] rng(p0, p0), distribution=rng_uniform\n",
	} {
		src := "HloModule m\n\ncomp {\n  p0 = f32[] parameter(0)\n" + body + "}\n\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT c = f32[] call(a), to_apply=comp\n}\n"
		m, err := hlo.ParseText([]byte(src), "x.hlo")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Computations {
			if c.Name == "comp" && compileScalar(c) != nil {
				t.Errorf("compiled %q", body)
			}
		}
	}
}

// TestStableSort checks the merge sort sort uses against the standard
// library's stable sort, with many ties, at sizes around its run length.
func TestStableSort(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, n := range []int{0, 1, 2, 15, 16, 17, 31, 33, 100, 1000, 1024} {
		keys := make([]int64, n)
		for i := range keys {
			keys[i] = int64(r.Intn(10))
		}
		got, buf := make([]int64, n), make([]int64, n)
		for i := range got {
			got[i] = int64(i)
		}
		want := slices.Clone(got)
		less := func(a, b int64) bool { return keys[a] < keys[b] }
		stableSort(got, buf, less)
		slices.SortStableFunc(want, func(a, b int64) int { return int(keys[a] - keys[b]) })
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: got %v, want %v", n, got, want)
		}
	}
}

// TestScalarCacheReleasesComputations checks that the program cache does not
// keep computations (and their modules) alive.
func TestScalarCacheReleasesComputations(t *testing.T) {
	// Other tests' computations may be released while this one runs, so
	// watch this computation's own entry rather than the cache's size.
	var key weak.Pointer[hlo.Computation]
	func() {
		src := mapProgram([]dtype.Type{dtype.F32, dtype.F32}, dtype.F32, "  ROOT r = f32[] clamp(p0, p1, p0)\n", 4)
		m, err := hlo.ParseText([]byte(src), "x.hlo")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Computations {
			if c.Name == "comp" {
				if compileScalar(c) == nil {
					t.Fatal("did not compile")
				}
				key = weak.Make(c)
				if _, ok := scalarCache.Load(key); !ok {
					t.Fatal("the compiled program is not cached")
				}
			}
		}
	}()
	held := func() bool { _, ok := scalarCache.Load(key); return ok }
	for i := 0; i < 100 && held(); i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if held() {
		t.Fatal("the cache still holds a dropped computation")
	}
}
