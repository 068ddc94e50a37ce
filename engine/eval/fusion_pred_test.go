package eval

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// predMembers counts the fusePred members of the entry's fusion plan.
func predMembers(t *testing.T, src string) int {
	t.Helper()
	m, err := hlo.ParseText([]byte(src), "test.hlo")
	if err != nil {
		t.Fatal(err)
	}
	p := New(m, Options{}).fusionPlanFor(m.Entry)
	if p == nil {
		return 0
	}
	n := 0
	for _, g := range p.groups {
		for _, k := range g.kinds {
			if k == fusePred {
				n++
			}
		}
	}
	return n
}

// Random DAGs of f32, s32 or u32 ops whose selects read pred logic (and,
// or, xor, not, compares of preds) over compares and an outside pred,
// fused against op by op; some pred values are also outputs, so they stay
// op by op.
func TestFusionBlockedPredLogicMatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(34))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {2, 20000}}
	fused, withPred := 0, 0
	const trials = 60
	for trial := 0; trial < trials; trial++ {
		et := []dtype.Type{dtype.F32, dtype.S32, dtype.U32}[trial%3]
		ts := map[dtype.Type]string{dtype.F32: "f32", dtype.S32: "s32", dtype.U32: "u32"}[et]
		un, bin := fuseIntUnaryOps, fuseIntBinaryOps
		if et == dtype.F32 {
			un, bin = fuseUnaryOps, fuseBinaryOps
		}
		dims := shapes[trial%len(shapes)]
		dd := strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		sh, ps := ts+dd, "pred"+dd
		var b strings.Builder
		b.WriteString("HloModule m\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  s0 = %s[] parameter(2)\n  q = %s parameter(3)\n", sh, sh, ts, ps)
		fmt.Fprintf(&b, "  v1 = %s broadcast(s0), dimensions={}\n  c = %s compare(p0, p1), direction=LT\n", sh, ps)
		names := []string{"p0", "p1", "v1"}
		preds := []string{"q", "c"}
		dirs := []string{"EQ", "NE", "LT", "LE", "GT", "GE"}
		steps := 3 + rng.Intn(10)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			pickP := func() string { return preds[len(preds)-1-rng.Intn(min(len(preds), 4))] }
			for range 1 + rng.Intn(3) {
				pn := fmt.Sprintf("c%d_%d", i, len(preds))
				switch rng.Intn(6) {
				case 0:
					fmt.Fprintf(&b, "  %s = %s compare(%s, %s), direction=%s\n", pn, ps, pick(), pick(), dirs[rng.Intn(6)])
				case 1:
					fmt.Fprintf(&b, "  %s = %s not(%s)\n", pn, ps, pickP())
				case 2:
					fmt.Fprintf(&b, "  %s = %s compare(%s, %s), direction=%s\n", pn, ps, pickP(), pickP(), dirs[rng.Intn(6)])
				default:
					fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", pn, ps, []string{"and", "or", "xor"}[rng.Intn(3)], pickP(), pickP())
				}
				preds = append(preds, pn)
			}
			switch k := rng.Intn(6); {
			case k < 3:
				fmt.Fprintf(&b, "  %s = %s select(%s, %s, %s)\n", name, sh, pickP(), pick(), pick())
			case k < 4:
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, un[rng.Intn(len(un))], pick())
			default:
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, bin[rng.Intn(len(bin))], pick(), pick())
			}
			names = append(names, name)
		}
		side := names[3+rng.Intn(len(names)-3)]
		if trial%4 == 3 {
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
		x, y := mk(dims), mk(dims)
		if et != dtype.F32 {
			// ties for EQ, LE and GE
			xs, ys := rawView[uint32](x.Data), rawView[uint32](y.Data)
			for i := 0; i < len(xs); i += 3 {
				ys[i] = xs[i]
			}
		}
		if fusedVsOpByOp(t, b.String(), x, y, mk(nil), q) {
			fused++
		}
		if predMembers(t, b.String()) > 0 {
			withPred++
		}
	}
	if fused < trials/2 || withPred < trials/3 {
		t.Errorf("only %d of %d modules had a fused group, %d fused pred logic", fused, trials, withPred)
	}
}

// jnp's floor_divide and remainder of s32 as JAX lowers them (sign and
// compare fix-ups joined by pred and/compare): fused with their pred logic,
// against op by op and against floor division computed directly.
func TestFusionBlockedFloorDivMod(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  a = s32[4,3000] parameter(0)
  b = s32[4,3000] parameter(1)
  sa = s32[4,3000] sign(a)
  sb = s32[4,3000] sign(b)
  ne4 = pred[4,3000] compare(sa, sb), direction=NE
  rem1 = s32[4,3000] remainder(a, b)
  c0 = s32[] constant(0)
  zeros = s32[4,3000] broadcast(c0), dimensions={}
  ne5 = pred[4,3000] compare(rem1, zeros), direction=NE
  and1 = pred[4,3000] and(ne4, ne5)
  div1 = s32[4,3000] divide(a, b)
  c1 = s32[] constant(1)
  ones = s32[4,3000] broadcast(c1), dimensions={}
  sub3 = s32[4,3000] subtract(div1, ones)
  fdiv = s32[4,3000] select(and1, sub3, div1)
  eq1 = pred[4,3000] compare(b, zeros), direction=EQ
  bb = s32[4,3000] select(eq1, ones, b)
  rem3 = s32[4,3000] remainder(a, bb)
  lt2 = pred[4,3000] compare(rem3, zeros), direction=LT
  lt3 = pred[4,3000] compare(bb, zeros), direction=LT
  ne9 = pred[4,3000] compare(lt2, lt3), direction=NE
  ne8 = pred[4,3000] compare(rem3, zeros), direction=NE
  and3 = pred[4,3000] and(ne9, ne8)
  add1 = s32[4,3000] add(rem3, bb)
  mod = s32[4,3000] select(and3, add1, rem3)
  ROOT t = (s32[4,3000], s32[4,3000]) tuple(fdiv, mod)
}
`
	rng := rand.New(rand.NewSource(9))
	dims := []int64{4, 3000}
	a, b := tensor.New(dtype.S32, dims), tensor.New(dtype.S32, dims)
	as, bs := rawView[uint32](a.Data), rawView[uint32](b.Data)
	for i := range as {
		as[i], bs[i] = divInt32Case(rng)
	}
	if !fusedVsOpByOp(t, src, a, b) {
		t.Fatal("nothing was fused")
	}
	if n := predMembers(t, src); n != 3 {
		t.Fatalf("%d pred members fused, want 3 (and1, ne9, and3)", n)
	}
	m, err := hlo.ParseText([]byte(src), "t.hlo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := New(m, Options{}).Run([]Value{ArrayValue(a), ArrayValue(b)})
	if err != nil {
		t.Fatal(err)
	}
	ls := out.Leaves()
	fd, md := rawView[int32](ls[0].Data), rawView[int32](ls[1].Data)
	for i := range as {
		x, y := int64(int32(as[i])), int64(int32(bs[i]))
		var q, r int64
		if y == 0 {
			// x/0 = -1 and x%0 = x: sign(x) != sign(0) and x%0 != 0 for
			// x != 0, so floor_divide subtracts one; remainder divides by 1.
			q, r = -1, 0
			if x != 0 {
				q = -2
			}
		} else {
			q, r = x/y, x%y
			if r != 0 && (r < 0) != (y < 0) {
				q, r = q-1, r+y
			}
		}
		if fd[i] != int32(q) || md[i] != int32(r) {
			t.Fatalf("[%d] %d divmod %d = (%d, %d), want (%d, %d)", i, x, y, fd[i], md[i], int32(q), int32(r))
		}
	}
}
