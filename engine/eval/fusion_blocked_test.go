package eval

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// randomF32 fills a tensor with normal values, subnormals of both signs,
// zeros, infinities and NaNs.
func randomF32(rng *rand.Rand, dims []int64) *tensor.Tensor {
	t := tensor.New(dtype.F32, dims)
	for i, v := range t.F32() {
		_ = v
		var x float32
		switch rng.Intn(16) {
		case 0:
			x = math.Float32frombits(uint32(rng.Intn(0x7fffff)+1) | uint32(rng.Intn(2))<<31)
		case 1:
			x = float32(math.Copysign(0, float64(rng.Intn(2)*2-1)))
		case 2:
			x = float32(math.Inf(rng.Intn(2)*2 - 1))
		case 3:
			x = float32(math.NaN())
		case 4:
			x = float32(rng.NormFloat64() * 1e-37)
		default:
			x = float32(rng.NormFloat64() * 3)
		}
		t.F32()[i] = x
	}
	return t
}

// fusedVsOpByOp evaluates src with and without blocked fusion and requires
// the same bits; it reports whether the plan fused something.
func fusedVsOpByOp(t *testing.T, src string, args ...*tensor.Tensor) bool {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	var vs []Value
	for _, a := range args {
		vs = append(vs, ArrayValue(a))
	}
	ev := New(m, Options{})
	fused := ev.fusionPlanFor(m.Entry) != nil
	got, err := ev.Run(vs)
	if err != nil {
		t.Fatalf("fused: %v\n%s", err, src)
	}
	fusionDisabled = true
	want, err := New(m, Options{}).Run(vs)
	fusionDisabled = false
	if err != nil {
		t.Fatalf("op by op: %v", err)
	}
	gl, wl := got.Leaves(), want.Leaves()
	if len(gl) != len(wl) {
		t.Fatalf("%d outputs, want %d", len(gl), len(wl))
	}
	for i := range gl {
		if !equalDims(gl[i].Dims, wl[i].Dims) || string(gl[i].Data) != string(wl[i].Data) {
			if gl[i].Type != dtype.F32 {
				g, w := rawView[uint8](gl[i].Data), rawView[uint8](wl[i].Data)
				for k := range w {
					if g[k] != w[k] {
						t.Fatalf("output %d (%v) byte %d: fused %#x, op by op %#x\n%s", i, gl[i].Type, k, g[k], w[k], src)
					}
				}
				t.Fatalf("output %d (%v) differs\n%s", i, gl[i].Type, src)
			}
			g, w := gl[i].F32(), wl[i].F32()
			for k := range w {
				if math.Float32bits(g[k]) != math.Float32bits(w[k]) {
					t.Fatalf("output %d element %d: fused %v (%#x), op by op %v (%#x)\n%s", i, k, g[k], math.Float32bits(g[k]), w[k], math.Float32bits(w[k]), src)
				}
			}
			t.Fatalf("output %d differs\n%s", i, src)
		}
	}
	return fused
}

var fuseUnaryOps = []string{"tanh", "exponential", "negate", "abs", "log", "log-plus-one", "logistic", "sqrt",
	"rsqrt", "sine", "cosine", "floor", "sign", "exponential-minus-one", "cbrt", "erf"}
var fuseBinaryOps = []string{"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "atan2", "remainder"}

// Random DAGs of elementwise f32 ops, with broadcasts of a row, a column
// and a scalar, values used twice, an outside use of an inner value, and a
// trailing reduce, fused against op by op.
func TestFusionBlockedMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {64, 64}, {2, 4100}, {7, 33}, {2, 20000}}
	fused := 0
	const trials = 80
	for trial := 0; trial < trials; trial++ {
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		sh := "f32" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		row := fmt.Sprintf("f32[%d]", dims[r-1])
		var b strings.Builder
		b.WriteString("HloModule m\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n")
		b.WriteString("mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] maximum(a, b)\n}\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  s0 = f32[] parameter(3)\n", sh, sh, row)
		fmt.Fprintf(&b, "  v0 = %s broadcast(p2), dimensions={%d}\n  v1 = %s broadcast(s0), dimensions={}\n", sh, r-1, sh)
		names := []string{"p0", "p1", "v0", "v1"}
		steps := 3 + rng.Intn(8)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			switch k := rng.Intn(10); {
			case k < 4:
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, fuseUnaryOps[rng.Intn(len(fuseUnaryOps))], pick())
			case k < 9:
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, fuseBinaryOps[rng.Intn(len(fuseBinaryOps))], pick(), pick())
			default:
				fmt.Fprintf(&b, "  %s = %s custom-call(%s, %s, %s), custom_call_target=\"%s\"\n", name, sh, pick(), pick(), pick(), FMATarget)
			}
			names = append(names, name)
		}
		last := names[len(names)-1]
		side := names[4+rng.Intn(len(names)-4)]
		switch trial % 3 {
		case 0:
			fmt.Fprintf(&b, "  ROOT t = (%s, %s) tuple(%s, %s)\n}\n", sh, sh, last, side)
		case 1:
			out := "f32" + strings.ReplaceAll(fmt.Sprint(dims[:r-1]), " ", ",")
			fmt.Fprintf(&b, "  z = f32[] constant(0)\n  red = %s reduce(%s, z), dimensions={%d}, to_apply=sum\n", out, last, r-1)
			fmt.Fprintf(&b, "  ROOT t = (%s, %s) tuple(red, %s)\n}\n", out, sh, side)
		default:
			all := make([]string, r)
			for i := range all {
				all[i] = fmt.Sprint(i)
			}
			fmt.Fprintf(&b, "  z = f32[] constant(-inf)\n  ROOT red = f32[] reduce(%s, z), dimensions={%s}, to_apply=mx\n}\n", last, strings.Join(all, ","))
		}
		if fusedVsOpByOp(t, b.String(), randomF32(rng, dims), randomF32(rng, dims), randomF32(rng, dims[r-1:]), randomF32(rng, nil)) {
			fused++
		}
	}
	if fused < trials/2 {
		t.Errorf("only %d of %d modules had a fused group", fused, trials)
	}
}

// Slices of a wider operand read in place by groups (with strides and
// offsets in every dimension), and a broadcast and a slice each shared by
// several groups (the gates of an LSTM step), fused against op by op.
func TestFusionBlockedSlicesAndSharedGathers(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	shapes := [][]int64{{16, 256}, {3, 5, 70}, {4100}, {2, 3000}}
	for trial := 0; trial < 40; trial++ {
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		sh := "f32" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		wide := make([]int64, r)
		var b strings.Builder
		b.WriteString("HloModule m\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n")
		gates := 2 + rng.Intn(3)
		slices := make([]string, gates)
		ranges := make([][]string, gates)
		for d := range wide {
			wide[d] = dims[d]*int64(1+rng.Intn(3)) + int64(rng.Intn(5))
		}
		for k := range slices {
			ranges[k] = make([]string, r)
			for d := range wide {
				st := int64(1 + rng.Intn(2))
				if dims[d]*st > wide[d] {
					st = 1
				}
				start := rng.Int63n(wide[d] - (dims[d]-1)*st)
				ranges[k][d] = fmt.Sprintf("[%d:%d:%d]", start, start+(dims[d]-1)*st+1, st)
			}
		}
		wsh := "f32" + strings.ReplaceAll(fmt.Sprint(wide), " ", ",")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  w = %s parameter(1)\n  one = f32[] constant(1)\n  b1 = %s broadcast(one), dimensions={}\n", sh, wsh, sh)
		for k := range slices {
			slices[k] = fmt.Sprintf("sl%d", k)
			fmt.Fprintf(&b, "  %s = %s slice(w), slice={%s}\n", slices[k], sh, strings.Join(ranges[k], ", "))
		}
		var outs []string
		for k := 0; k < gates; k++ {
			src := slices[k]
			if k > 0 && rng.Intn(3) == 0 {
				src = slices[k-1] // a slice two gates share
			}
			fmt.Fprintf(&b, "  n%d = %s negate(%s)\n  e%d = %s exponential(n%d)\n  a%d = %s add(e%d, b1)\n  g%d = %s divide(b1, a%d)\n",
				k, sh, src, k, sh, k, k, sh, k, k, sh, k)
			last := fmt.Sprintf("g%d", k)
			if rng.Intn(2) == 0 {
				fmt.Fprintf(&b, "  h%d = %s %s(%s, p0)\n", k, sh, fuseBinaryOps[rng.Intn(len(fuseBinaryOps))], last)
				last = fmt.Sprintf("h%d", k)
			}
			outs = append(outs, last)
		}
		shs := strings.TrimSuffix(strings.Repeat(sh+", ", len(outs)), ", ")
		if trial%2 == 1 {
			out := "f32" + strings.ReplaceAll(fmt.Sprint(dims[:r-1]), " ", ",")
			fmt.Fprintf(&b, "  z = f32[] constant(0)\n  red = %s reduce(%s, z), dimensions={%d}, to_apply=sum\n", out, outs[0], r-1)
			outs[0], shs = "red", out+strings.TrimPrefix(shs, sh)
		}
		fmt.Fprintf(&b, "  ROOT t = (%s) tuple(%s)\n}\n", shs, strings.Join(outs, ", "))
		src := b.String()
		m, err := hlo.ParseText([]byte(src), "test.hlo")
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, src)
		}
		// The plan reads b1 (and the slices) inside several groups.
		p := planFusion(m.Entry)
		in := 0
		for _, g := range p.groups {
			for _, mem := range g.members {
				if mem.Name == "b1" {
					in++
				}
			}
		}
		if in != gates {
			t.Fatalf("b1 is a member of %d groups, want %d\n%s", in, gates, src)
		}
		fusedVsOpByOp(t, src, randomF32(rng, dims), randomF32(rng, wide))
	}
}

// A block several members read with subnormals flushed is scanned once and
// what the scan found is reused; sign-bit ops and tanh pass subnormals on
// unflushed, so their consumers must still flush them: each chain here
// turns an unflushed subnormal into a visibly different result (times a
// huge value, divided into 1, times inf).
func TestFusionBlockedSubnormalKnowledge(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	dims := []int64{5000}
	for _, chain := range []string{
		"  a = f32[5000] negate(p0)\n  b = f32[5000] multiply(a, p1)\n  ROOT c = f32[5000] add(b, a)",
		"  a = f32[5000] abs(p0)\n  b = f32[5000] divide(p1, a)\n  ROOT c = f32[5000] multiply(b, p0)",
		"  a = f32[5000] tanh(p0)\n  n = f32[5000] negate(a)\n  b = f32[5000] multiply(n, p1)\n  ROOT c = f32[5000] subtract(b, a)",
		"  a = f32[5000] tanh(p0)\n  b = f32[5000] multiply(a, p1)\n  e = f32[5000] exponential(a)\n  ROOT c = f32[5000] add(b, e)",
		"  a = f32[5000] multiply(p0, p1)\n  n = f32[5000] negate(a)\n  t = f32[5000] tanh(n)\n  ROOT c = f32[5000] divide(p1, t)",
	} {
		src := "HloModule m\nENTRY e {\n  p0 = f32[5000] parameter(0)\n  p1 = f32[5000] parameter(1)\n" + chain + "\n}\n"
		x, y := randomF32(rng, dims), randomF32(rng, dims)
		for i := range y.F32() {
			if i%3 == 0 {
				y.F32()[i] = float32(math.Ldexp(1, 100+rng.Intn(27))) // huge
			}
		}
		if !fusedVsOpByOp(t, src, x, y) {
			t.Fatalf("nothing fused:\n%s", src)
		}
	}
}

// Random DAGs with compares and selects among the elementwise ops (the
// where() chains of masks, softplus and clipping): selects of a compare in
// the group, of an outside pred and of a compare also used outside (which
// then stays op by op), fused against op by op.
func TestFusionBlockedCompareSelect(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {2, 4100}, {7, 33}}
	dirs := []string{"EQ", "NE", "LT", "LE", "GT", "GE"}
	fused := 0
	const trials = 80
	for trial := 0; trial < trials; trial++ {
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		sh := "f32" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		ps := "pred" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		var b strings.Builder
		b.WriteString("HloModule m\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  m0 = %s parameter(2)\n  s0 = f32[] parameter(3)\n", sh, sh, ps)
		fmt.Fprintf(&b, "  v1 = %s broadcast(s0), dimensions={}\n  zero = f32[] constant(0)\n  v0 = %s broadcast(zero), dimensions={}\n", sh, sh)
		names := []string{"p0", "p1", "v0", "v1"}
		preds := []string{"m0"}
		var extra []string // values also used outside the group
		steps := 3 + rng.Intn(8)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			switch k := rng.Intn(10); {
			case k < 2:
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, fuseUnaryOps[rng.Intn(len(fuseUnaryOps))], pick())
			case k < 4:
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, fuseBinaryOps[rng.Intn(len(fuseBinaryOps))], pick(), pick())
			case k < 9:
				c := "c" + name
				fmt.Fprintf(&b, "  %s = %s compare(%s, %s), direction=%s\n", c, ps, pick(), pick(), dirs[rng.Intn(len(dirs))])
				preds = append(preds, c)
				p := preds[len(preds)-1-rng.Intn(min(len(preds), 2))]
				if rng.Intn(8) == 0 {
					extra = append(extra, c)
				}
				fmt.Fprintf(&b, "  %s = %s select(%s, %s, %s)\n", name, sh, p, pick(), pick())
			default:
				fmt.Fprintf(&b, "  %s = %s select(m0, %s, %s)\n", name, sh, pick(), pick())
			}
			names = append(names, name)
		}
		last := names[len(names)-1]
		outs, shs := []string{last}, []string{sh}
		if trial%2 == 1 {
			out := "f32" + strings.ReplaceAll(fmt.Sprint(dims[:r-1]), " ", ",")
			fmt.Fprintf(&b, "  z = f32[] constant(0)\n  red = %s reduce(%s, z), dimensions={%d}, to_apply=sum\n", out, last, r-1)
			outs, shs = []string{"red"}, []string{out}
		}
		for _, x := range extra {
			outs, shs = append(outs, x), append(shs, ps)
		}
		fmt.Fprintf(&b, "  ROOT t = (%s) tuple(%s)\n}\n", strings.Join(shs, ", "), strings.Join(outs, ", "))
		mask := tensor.New(dtype.Pred, dims)
		for i := range mask.Data {
			mask.Data[i] = byte(rng.Intn(2))
		}
		x, y := randomF32(rng, dims), randomF32(rng, dims)
		for i := range y.F32() {
			if i%4 == 0 {
				y.F32()[i] = x.F32()[i] // ties for EQ, LE, GE
			}
		}
		if fusedVsOpByOp(t, b.String(), x, y, mask, randomF32(rng, nil)) {
			fused++
		}
	}
	if fused < trials/2 {
		t.Errorf("only %d of %d modules had a fused group", fused, trials)
	}
}

// randomInt32 fills an s32 or u32 tensor with small values, shift counts
// (in range and out of it), extremes and random bits.
func randomInt32(rng *rand.Rand, t dtype.Type, dims []int64) *tensor.Tensor {
	x := tensor.New(t, dims)
	u := rawView[uint32](x.Data)
	for i := range u {
		switch rng.Intn(8) {
		case 0:
			u[i] = uint32(rng.Intn(40)) // shift counts, some of them >= 32
		case 1:
			u[i] = []uint32{0, 1, 0xffffffff, 0x80000000, 0x7fffffff}[rng.Intn(5)]
		case 2:
			u[i] = uint32(-rng.Intn(40))
		default:
			u[i] = rng.Uint32()
		}
	}
	return x
}

var fuseIntUnaryOps = []string{"negate", "not", "abs", "sign", "popcnt", "count-leading-zeros"}
var fuseIntBinaryOps = []string{"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
	"and", "or", "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic"}

// Random DAGs of s32 and u32 elementwise ops with broadcasts of a row and a
// scalar, fused against op by op.
func TestFusionBlockedInt32MatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(32))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {2, 20000}}
	fused := 0
	const trials = 60
	for trial := 0; trial < trials; trial++ {
		et := []dtype.Type{dtype.S32, dtype.U32}[trial%2]
		ts := map[dtype.Type]string{dtype.S32: "s32", dtype.U32: "u32"}[et]
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		sh := ts + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		row := fmt.Sprintf("%s[%d]", ts, dims[r-1])
		var b strings.Builder
		b.WriteString("HloModule m\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  s0 = %s[] parameter(3)\n", sh, sh, row, ts)
		fmt.Fprintf(&b, "  v0 = %s broadcast(p2), dimensions={%d}\n  v1 = %s broadcast(s0), dimensions={}\n", sh, r-1, sh)
		names := []string{"p0", "p1", "v0", "v1"}
		steps := 3 + rng.Intn(10)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			if rng.Intn(4) == 0 {
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, fuseIntUnaryOps[rng.Intn(len(fuseIntUnaryOps))], pick())
			} else {
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, fuseIntBinaryOps[rng.Intn(len(fuseIntBinaryOps))], pick(), pick())
			}
			names = append(names, name)
		}
		side := names[4+rng.Intn(len(names)-4)]
		fmt.Fprintf(&b, "  ROOT t = (%s, %s) tuple(%s, %s)\n}\n", sh, sh, names[len(names)-1], side)
		if fusedVsOpByOp(t, b.String(), randomInt32(rng, et, dims), randomInt32(rng, et, dims),
			randomInt32(rng, et, dims[r-1:]), randomInt32(rng, et, nil)) {
			fused++
		}
	}
	if fused < trials/2 {
		t.Errorf("only %d of %d modules had a fused group", fused, trials)
	}
}

// A threefry2x32 round as JAX lowers it (u32 add, rotate by a broadcast
// count, xor), fused, against the round computed directly.
func TestFusionBlockedThreefryRound(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  x0 = u32[3,5000] parameter(0)
  x1 = u32[3,5000] parameter(1)
  r = u32[] parameter(2)
  a = u32[3,5000] add(x0, x1)
  rb = u32[3,5000] broadcast(r), dimensions={}
  shl = u32[3,5000] shift-left(x1, rb)
  c32 = u32[] constant(32)
  rr = u32[] subtract(c32, r)
  rrb = u32[3,5000] broadcast(rr), dimensions={}
  shr = u32[3,5000] shift-right-logical(x1, rrb)
  rot = u32[3,5000] or(shl, shr)
  ROOT y = u32[3,5000] xor(a, rot)
}
`
	rng := rand.New(rand.NewSource(5))
	x0, x1 := randomInt32(rng, dtype.U32, []int64{3, 5000}), randomInt32(rng, dtype.U32, []int64{3, 5000})
	for _, rot := range []uint32{13, 15, 26, 6, 0} {
		r := tensor.New(dtype.U32, nil)
		rawView[uint32](r.Data)[0] = rot
		if !fusedVsOpByOp(t, src, x0, x1, r) {
			t.Fatal("the round was not fused")
		}
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatal(err)
		}
		out, err := New(m, Options{}).Run([]Value{ArrayValue(x0), ArrayValue(x1), ArrayValue(r)})
		if err != nil {
			t.Fatal(err)
		}
		a, b, got := rawView[uint32](x0.Data), rawView[uint32](x1.Data), rawView[uint32](out.T.Data)
		for i := range got {
			want := (a[i] + b[i]) ^ (b[i]<<rot | b[i]>>(32-rot))
			if rot == 0 {
				want = (a[i] + b[i]) ^ b[i] // a shift by 32 gives 0
			}
			if got[i] != want {
				t.Fatalf("rotation %d element %d: %#x, want %#x", rot, i, got[i], want)
			}
		}
	}
}

// Random DAGs with selects (on a pred parameter and on a compare of two
// operands, neither of them fused) among f32, s32 and u32 ops, fused
// against op by op.
func TestFusionBlockedSelectMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(33))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {2, 20000}}
	fused := 0
	const trials = 60
	for trial := 0; trial < trials; trial++ {
		et := []dtype.Type{dtype.F32, dtype.S32, dtype.U32}[trial%3]
		ts := map[dtype.Type]string{dtype.F32: "f32", dtype.S32: "s32", dtype.U32: "u32"}[et]
		un, bin := fuseIntUnaryOps, fuseIntBinaryOps
		if et == dtype.F32 {
			un, bin = fuseUnaryOps, fuseBinaryOps
		}
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		dd := strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		sh, ps := ts+dd, "pred"+dd
		var b strings.Builder
		b.WriteString("HloModule m\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  s0 = %s[] parameter(2)\n  q = %s parameter(3)\n", sh, sh, ts, ps)
		fmt.Fprintf(&b, "  v1 = %s broadcast(s0), dimensions={}\n  c = %s compare(p0, p1), direction=LT\n", sh, ps)
		names := []string{"p0", "p1", "v1"}
		preds := []string{"q", "c"}
		steps := 3 + rng.Intn(10)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			if rng.Intn(3) == 0 {
				cn := fmt.Sprintf("c%d", i)
				fmt.Fprintf(&b, "  %s = %s compare(%s, %s), direction=%s\n", cn, ps, pick(), pick(),
					[]string{"EQ", "NE", "LT", "LE", "GT", "GE"}[rng.Intn(6)])
				preds = append(preds, cn)
			}
			switch k := rng.Intn(6); {
			case k < 2:
				fmt.Fprintf(&b, "  %s = %s select(%s, %s, %s)\n", name, sh, preds[len(preds)-1-rng.Intn(min(len(preds), 3))], pick(), pick())
			case k < 3:
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, un[rng.Intn(len(un))], pick())
			default:
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, bin[rng.Intn(len(bin))], pick(), pick())
			}
			names = append(names, name)
		}
		side := names[3+rng.Intn(len(names)-3)]
		if trial%4 == 3 {
			// A compare with a user outside its group stays op by op.
			fmt.Fprintf(&b, "  ROOT t = (%s, %s, %s) tuple(%s, %s, %s)\n}\n", sh, sh, ps, names[len(names)-1], side, preds[len(preds)-1])
		} else {
			fmt.Fprintf(&b, "  ROOT t = (%s, %s) tuple(%s, %s)\n}\n", sh, sh, names[len(names)-1], side)
		}
		mk := func(d []int64) *tensor.Tensor {
			if et == dtype.F32 {
				return randomF32(rng, d)
			}
			return randomInt32(rng, et, d)
		}
		q := tensor.New(dtype.Pred, dims)
		for i := range q.Data {
			q.Data[i] = byte(rng.Intn(2))
		}
		if fusedVsOpByOp(t, b.String(), mk(dims), mk(dims), mk(nil), q) {
			fused++
		}
		_ = r
	}
	if fused < trials/2 {
		t.Errorf("only %d of %d modules had a fused group", fused, trials)
	}
}
