package eval

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// smallGroupLoop is a loop over a state x of f32[N] (and a pred mask and a
// bf16 companion) whose body runs blocked groups every step: sin, an FMA
// and splat broadcasts (fori_loop's c*0.999 + sin(c)*0.001), a select on
// an outside pred, a group ending in a compare, and a bf16 group.
const smallGroupLoop = `HloModule m
body {
  st = (s32[], f32[%N%], pred[%N%], bf16[%N%]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  x = f32[%N%] get-tuple-element(st), index=1
  p = pred[%N%] get-tuple-element(st), index=2
  y = bf16[%N%] get-tuple-element(st), index=3
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[] constant(0.999)
  ab = f32[%N%] broadcast(a), dimensions={}
  b = f32[] constant(0.001)
  bb = f32[%N%] broadcast(b), dimensions={}
  s = f32[%N%] sine(x)
  sb = f32[%N%] multiply(s, bb)
  f = f32[%N%] custom-call(x, ab, sb), custom_call_target="__goldtrace$xla_fma"
  n = f32[%N%] negate(f)
  g = f32[%N%] select(p, f, n)
  z = f32[] constant(0)
  zb = f32[%N%] broadcast(z), dimensions={}
  h = f32[%N%] maximum(g, zb)
  x1 = f32[%N%] subtract(g, h)
  q = f32[%N%] tanh(x1)
  p1 = pred[%N%] compare(q, zb), direction=LT
  yw = f32[%N%] convert(y)
  yx = f32[%N%] add(yw, x1)
  y1 = bf16[%N%] convert(yx)
  x2 = f32[%N%] multiply(x1, ab)
  ROOT r = (s32[], f32[%N%], pred[%N%], bf16[%N%]) tuple(i1, x2, p1, y1)
}
cond {
  st = (s32[], f32[%N%], pred[%N%], bf16[%N%]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  k = s32[] constant(%STEPS%)
  ROOT lt = pred[] compare(i, k), direction=LT
}
ENTRY e {
  x = f32[%N%] parameter(0)
  p = pred[%N%] parameter(1)
  y = bf16[%N%] parameter(2)
  z = s32[] constant(0)
  s0 = (s32[], f32[%N%], pred[%N%], bf16[%N%]) tuple(z, x, p, y)
  w = (s32[], f32[%N%], pred[%N%], bf16[%N%]) while(s0), condition=cond, body=body
  ROOT o = (f32[%N%], pred[%N%], bf16[%N%]) tuple(w.1, w.2, w.3)
}`

func smallGroupModule(t testing.TB, n, steps int) (*hlo.Module, []*tensor.Tensor) {
	src := strings.NewReplacer("%N%", fmt.Sprint(n), "%STEPS%", fmt.Sprint(steps)).Replace(smallGroupLoop)
	// The tuple of the while's elements, spelled out.
	src = strings.Replace(src, "tuple(w.1, w.2, w.3)", "tuple(w1, w2, w3)", 1)
	src = strings.Replace(src, "  ROOT o =", fmt.Sprintf("  w1 = f32[%d] get-tuple-element(w), index=1\n  w2 = pred[%d] get-tuple-element(w), index=2\n"+
		"  w3 = bf16[%d] get-tuple-element(w), index=3\n  ROOT o =", n, n, n), 1)
	m, err := hlo.ParseText([]byte(src), "small.hlo")
	if err != nil {
		t.Fatal(err)
	}
	x := tensor.New(dtype.F32, []int64{int64(n)})
	p := tensor.New(dtype.Pred, []int64{int64(n)})
	y := tensor.New(dtype.BF16, []int64{int64(n)})
	vals := make([]float32, n)
	for i := range n {
		x.F32()[i] = float32(math.Sin(float64(i)*0.37)) * 3
		if i%3 == 0 {
			x.F32()[i] = float32(i) * 1e-39 // subnormals
		}
		if i%2 == 1 {
			p.Data[i] = 1
		}
		vals[i] = float32(i) * 0.25
	}
	dtype.EncodeF32(dtype.BF16, vals, y.Data)
	return m, []*tensor.Tensor{x, p, y}
}

// Small groups in a loop body, run with their tables kept between steps
// and without parallelPull's closure (fusion_blocked.go), give the bits of
// the op-by-op evaluation, for one block and for several blocks.
func TestSmallLoopGroupsMatchOpByOp(t *testing.T) {
	for _, n := range []int{1, 16, 100, 5000} {
		m, args := smallGroupModule(t, n, 40)
		if !fusedVsOpByOp(t, hlo.Print(m), args...) {
			t.Logf("n=%d: the entry fused nothing (the body's groups run in the loop)", n)
		}
	}
}

// A step of a loop of small groups allocates nothing: 2000 steps allocate
// what 1000 do, within a few allocations.
func TestSmallLoopStepAllocatesNothing(t *testing.T) {
	allocs := func(steps int) float64 {
		m, args := smallGroupModule(t, 16, steps)
		vs := []Value{ArrayValue(args[0]), ArrayValue(args[1]), ArrayValue(args[2])}
		return testing.AllocsPerRun(5, func() {
			if _, err := Evaluate(m, vs, Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := allocs(1000), allocs(2000)
	if b-a > 50 {
		t.Fatalf("1000 more steps made %.0f more allocations (%.0f for 1000 steps, %.0f for 2000)", b-a, a, b)
	}
}
