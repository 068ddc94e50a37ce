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

// randomNarrow fills a bf16 or f16 tensor: mostly values of a few
// magnitudes rounded from f32, and random bit patterns (subnormals, NaNs
// with payloads of either sign, infinities).
func randomNarrow(rng *rand.Rand, t dtype.Type, dims []int64) *tensor.Tensor {
	f := randomF32(rng, dims).F32()
	out := tensor.New(t, dims)
	dtype.EncodeF32(t, f, out.Data)
	for i := 0; i < len(f); i++ {
		if rng.Intn(6) == 0 {
			b := uint16(rng.Intn(1 << 16))
			out.Data[2*i], out.Data[2*i+1] = byte(b), byte(b>>8)
		}
	}
	return out
}

// Random DAGs of bf16 and f16 elementwise ops (with broadcasts of a row and
// a scalar, selects, values used twice, an outside use of an inner value),
// fused against op by op: every member's block holds its narrow values as
// f32, each op rounded to the narrow type as the op-by-op evaluation does.
func TestFusionBlockedNarrowMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {64, 64}, {2, 4100}, {7, 33}}
	fused := 0
	const trials = 80
	for trial := 0; trial < trials; trial++ {
		et := []string{"bf16", "f16"}[trial%2]
		typ := map[string]dtype.Type{"bf16": dtype.BF16, "f16": dtype.F16}[et]
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		sh := et + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		psh := "pred" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		row := fmt.Sprintf("%s[%d]", et, dims[r-1])
		var b strings.Builder
		b.WriteString("HloModule m\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  s0 = %s[] parameter(3)\n  pr = %s parameter(4)\n", sh, sh, row, et, psh)
		fmt.Fprintf(&b, "  v0 = %s broadcast(p2), dimensions={%d}\n  v1 = %s broadcast(s0), dimensions={}\n", sh, r-1, sh)
		names := []string{"p0", "p1", "v0", "v1"}
		steps := 3 + rng.Intn(10)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			switch k := rng.Intn(12); {
			case k < 4:
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, fuseUnaryOps[rng.Intn(len(fuseUnaryOps))], pick())
			case k < 9:
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, fuseBinaryOps[rng.Intn(len(fuseBinaryOps))], pick(), pick())
			case k < 10:
				fmt.Fprintf(&b, "  %s = %s select(pr, %s, %s)\n", name, sh, pick(), pick())
			case k == 11 && typ == dtype.F16:
				fmt.Fprintf(&b, "  %s = %s custom-call(%s, %s, %s), custom_call_target=\"%s\"\n", name, sh, pick(), pick(), pick(), FMATarget)
			default:
				c := fmt.Sprintf("c%d", i)
				fmt.Fprintf(&b, "  %s = %s compare(%s, %s), direction=LT\n  %s = %s select(%s, %s, %s)\n", c, psh, pick(), pick(), name, sh, c, pick(), pick())
			}
			names = append(names, name)
		}
		last := names[len(names)-1]
		side := names[4+rng.Intn(len(names)-4)]
		// Widened to f32 in f32 groups: one with a trailing add reduce,
		// one with a multiply.
		fsh := "f32" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		rsh := "f32" + strings.ReplaceAll(fmt.Sprint(dims[:r-1]), " ", ",")
		fmt.Fprintf(&b, "  w0 = %s convert(%s)\n  w1 = %s convert(%s)\n  w2 = %s multiply(w1, w1)\n", fsh, last, fsh, side, fsh)
		fmt.Fprintf(&b, "  z = f32[] constant(0)\n  red = %s reduce(w0, z), dimensions={%d}, to_apply=sum\n", rsh, r-1)
		fmt.Fprintf(&b, "  ROOT t = (%s, %s, %s, %s) tuple(%s, %s, red, w2)\n}\n", sh, sh, rsh, fsh, last, side)
		pred := tensor.New(dtype.Pred, dims)
		for i := range pred.Data {
			pred.Data[i] = byte(rng.Intn(2))
		}
		if fusedVsOpByOp(t, b.String(), randomNarrow(rng, typ, dims), randomNarrow(rng, typ, dims),
			randomNarrow(rng, typ, dims[r-1:]), randomNarrow(rng, typ, nil), pred) {
			fused++
		}
	}
	if fused < trials/2 {
		t.Errorf("only %d of %d modules had a fused group", fused, trials)
	}
}

// f32 DAGs (with a bf16 input widened, a row broadcast, f32 subnormals,
// NaNs) whose root's only use is a convert to bf16 or f16, fused with the
// convert against op by op; and the same with a second use of the root,
// where the convert stays an op of its own. The planner is checked to fuse
// the convert in the first form.
func TestFusionBlockedNarrowingConvertMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {2, 4100}, {7, 33}}
	for trial := 0; trial < 40; trial++ {
		et := []string{"bf16", "f16"}[trial%2]
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		dd := strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		sh, nsh := "f32"+dd, et+dd
		var b strings.Builder
		b.WriteString("HloModule m\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = bf16%s parameter(1)\n  p2 = f32[%d] parameter(2)\n", sh, dd, dims[r-1])
		fmt.Fprintf(&b, "  w = %s convert(p1)\n  v0 = %s broadcast(p2), dimensions={%d}\n", sh, sh, r-1)
		names := []string{"p0", "w", "v0"}
		for i := range 2 + rng.Intn(6) {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 3))] }
			if rng.Intn(3) == 0 {
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, []string{"exponential", "tanh", "negate", "sqrt"}[rng.Intn(4)], pick())
			} else {
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, []string{"add", "subtract", "multiply", "divide"}[rng.Intn(4)], pick(), pick())
			}
			names = append(names, name)
		}
		last := names[len(names)-1]
		src := b.String()
		one := src + fmt.Sprintf("  ROOT n = %s convert(%s)\n}\n", nsh, last)
		two := src + fmt.Sprintf("  n = %s convert(%s)\n  ROOT t = (%s, %s) tuple(n, %s)\n}\n", nsh, last, nsh, sh, last)
		m, err := hlo.ParseText([]byte(one), "t.hlo")
		if err != nil {
			t.Fatal(err)
		}
		if p := planFusion(m.Entry); p == nil || p.groups[m.Entry.Root] == nil {
			t.Fatalf("the convert is not a group's value:\n%s", one)
		}
		args := []*tensor.Tensor{randomF32(rng, dims), randomNarrow(rng, dtype.BF16, dims), randomF32(rng, dims[r-1:])}
		fusedVsOpByOp(t, one, args...)
		fusedVsOpByOp(t, two, args...)
	}
}

// A fused reduce reads its root as the op-by-op reduce reads its operand:
// subnormals as zeros (a widened bf16 or a negate keeps them), the init's
// too, and its result flushed (two normals summing to a subnormal).
func TestFusionBlockedReduceFlushesAsOpByOp(t *testing.T) {
	const rows, cols = 8, 4096
	// Products are never fused: they take XLA's tree order (reduce_order.go).
	for _, op := range []string{"add", "maximum", "minimum"} {
		for _, root := range []string{"w = f32[8,4096] convert(p)", "w = f32[8,4096] negate(q)"} {
			for _, init := range []string{"0", "1e-40", "-1e-40"} {
				src := fmt.Sprintf("HloModule m\nr {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] %s(a, b)\n}\n"+
					"ENTRY e {\n  p = bf16[8,4096] parameter(0)\n  q = f32[8,4096] parameter(1)\n  %s\n  z = f32[] constant(%s)\n"+
					"  ROOT o = f32[8] reduce(w, z), dimensions={1}, to_apply=r\n}\n", op, root, init)
				x := tensor.New(dtype.BF16, []int64{rows, cols})
				q := tensor.New(dtype.F32, []int64{rows, cols})
				u, f := x.U16(), q.F32()
				for i := range u {
					switch r := i / cols; {
					case r < 3:
						u[i] = uint16(0x0040 + i%7) // bf16 subnormals
						f[i] = math.Float32frombits(uint32(0x400 + i%9))
					case r == 3 && i%cols < 2:
						// 1.5*2^-126 - 2^-126: a subnormal sum
						u[i] = []uint16{0x00c0, 0x8080}[i%cols]
						f[i] = -math.Float32frombits([]uint32{0x00c00000, 0x80800000}[i%cols])
					case r == 4:
						u[i], f[i] = 0x3f80, 1
					}
				}
				if !fusedVsOpByOp(t, src, x, q) {
					t.Fatalf("not fused:\n%s", src)
				}
			}
		}
	}
}

// Random bf16 and f16 DAGs whose root's only use is a convert to f32 that
// a reduce folds: the reduce joins the narrow group (the widening the
// identity on its blocks), against op by op; the planner is checked to
// make the one group.
func TestFusionBlockedNarrowWidenReduceMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	shapes := [][]int64{{64, 1024}, {5, 7, 300}, {2, 4100}, {300, 40}}
	for trial := 0; trial < 40; trial++ {
		et := []string{"bf16", "f16"}[trial%2]
		typ := map[string]dtype.Type{"bf16": dtype.BF16, "f16": dtype.F16}[et]
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		sh := et + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		fsh := "f32" + strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		rsh := "f32" + strings.ReplaceAll(fmt.Sprint(dims[:r-1]), " ", ",")
		op := []string{"add", "maximum", "minimum"}[rng.Intn(3)] // products: not fused (reduce_order.go)
		var b strings.Builder
		fmt.Fprintf(&b, "HloModule m\nred {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] %s(a, b)\n}\nENTRY e {\n", op)
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s[%d] parameter(2)\n", sh, sh, et, dims[r-1])
		fmt.Fprintf(&b, "  v0 = %s broadcast(p2), dimensions={%d}\n", sh, r-1)
		names := []string{"p0", "p1", "v0"}
		for i := range 1 + rng.Intn(6) {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 3))] }
			if rng.Intn(3) == 0 {
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, []string{"exponential", "tanh", "negate", "sqrt", "abs"}[rng.Intn(5)], pick())
			} else {
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, []string{"add", "subtract", "multiply", "divide"}[rng.Intn(4)], pick(), pick())
			}
			names = append(names, name)
		}
		last := names[len(names)-1]
		fmt.Fprintf(&b, "  w = %s convert(%s)\n  z = f32[] constant(%s)\n", fsh, last, []string{"0", "-inf", "1", "1e-40"}[rng.Intn(4)])
		fmt.Fprintf(&b, "  ROOT o = %s reduce(w, z), dimensions={%d}, to_apply=red\n}\n", rsh, r-1)
		src := b.String()
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatal(err)
		}
		p := planFusion(m.Entry)
		if p == nil || p.groups[m.Entry.Root] == nil || p.groups[m.Entry.Root].elem != typ {
			t.Fatalf("the reduce is not a %v group's value:\n%s", typ, src)
		}
		fusedVsOpByOp(t, src, tameNarrow(rng, typ, dims), tameNarrow(rng, typ, dims), tameNarrow(rng, typ, dims[r-1:]))
	}
}

// tameNarrow is a bf16 or f16 tensor of values near 1 (so that sums and
// products of rows stay finite and show every element), with subnormals of
// either sign, and a NaN or an infinity in a few places only.
func tameNarrow(rng *rand.Rand, t dtype.Type, dims []int64) *tensor.Tensor {
	f := make([]float32, tensor.NumElements(dims))
	for i := range f {
		f[i] = float32(1 + rng.NormFloat64()/8)
		switch rng.Intn(64) {
		case 0:
			f[i] = float32(rng.NormFloat64() * 1e-39) // bf16 subnormal; f16 zero
		case 1:
			f[i] = float32(rng.NormFloat64() * 3e-6) // f16 subnormal
		case 2:
			f[i] = -f[i]
		}
	}
	if rng.Intn(2) == 0 {
		f[rng.Intn(len(f))] = float32(math.NaN())
		f[rng.Intn(len(f))] = float32(math.Inf(1))
	}
	out := tensor.New(t, dims)
	dtype.EncodeF32(t, f, out.Data)
	return out
}
