package eval

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// randomF64 fills a tensor with normal values, subnormals of both signs,
// zeros, infinities and NaNs.
func randomF64(rng *rand.Rand, dims []int64) *tensor.Tensor {
	t := tensor.New(dtype.F64, dims)
	xs := t.F64()
	for i := range xs {
		var x float64
		switch rng.Intn(16) {
		case 0:
			x = math.Float64frombits(uint64(rng.Int63n(1<<52-1)+1) | uint64(rng.Intn(2))<<63)
		case 1:
			x = math.Copysign(0, float64(rng.Intn(2)*2-1))
		case 2:
			x = math.Inf(rng.Intn(2)*2 - 1)
		case 3:
			x = math.NaN()
		case 4:
			x = rng.NormFloat64() * 1e-307
		default:
			x = rng.NormFloat64() * 3
		}
		xs[i] = x
	}
	return t
}

var fuseUnaryOps64 = []string{"tanh", "exponential", "negate", "abs", "log", "log-plus-one", "logistic", "sqrt",
	"rsqrt", "sine", "cosine", "tan", "floor", "ceil", "sign", "exponential-minus-one", "cbrt", "erf", "round-nearest-even"}

// Random DAGs of elementwise f64 ops (with broadcasts of a row, a column
// and a scalar, compares and selects, values used twice, outside uses of
// inner values, and trailing reduces), fused against op by op.
func TestFusionBlockedF64MatchesOpByOp(t *testing.T) {
	rng := rand.New(rand.NewSource(64))
	shapes := [][]int64{{3000}, {37, 129}, {5, 7, 300}, {64, 64}, {2, 4100}, {7, 33}, {2, 20000}}
	fused := 0
	const trials = 90
	for trial := 0; trial < trials; trial++ {
		dims := shapes[trial%len(shapes)]
		r := len(dims)
		dd := strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		sh, ps := "f64"+dd, "pred"+dd
		row := fmt.Sprintf("f64[%d]", dims[r-1])
		var b strings.Builder
		b.WriteString("HloModule m\nsum {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  ROOT s = f64[] add(a, b)\n}\n")
		b.WriteString("mx {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  ROOT s = f64[] maximum(a, b)\n}\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  s0 = f64[] parameter(3)\n  q = %s parameter(4)\n", sh, sh, row, ps)
		fmt.Fprintf(&b, "  v0 = %s broadcast(p2), dimensions={%d}\n  v1 = %s broadcast(s0), dimensions={}\n", sh, r-1, sh)
		names := []string{"p0", "p1", "v0", "v1"}
		preds := []string{"q"}
		steps := 3 + rng.Intn(9)
		for i := 0; i < steps; i++ {
			name := fmt.Sprintf("x%d", i)
			pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 4))] }
			if rng.Intn(4) == 0 {
				cn := fmt.Sprintf("c%d", i)
				fmt.Fprintf(&b, "  %s = %s compare(%s, %s), direction=%s\n", cn, ps, pick(), pick(),
					[]string{"EQ", "NE", "LT", "LE", "GT", "GE"}[rng.Intn(6)])
				preds = append(preds, cn)
			}
			switch k := rng.Intn(10); {
			case k < 4:
				fmt.Fprintf(&b, "  %s = %s %s(%s)\n", name, sh, fuseUnaryOps64[rng.Intn(len(fuseUnaryOps64))], pick())
			case k < 8:
				fmt.Fprintf(&b, "  %s = %s %s(%s, %s)\n", name, sh, fuseBinaryOps[rng.Intn(len(fuseBinaryOps))], pick(), pick())
			default:
				fmt.Fprintf(&b, "  %s = %s select(%s, %s, %s)\n", name, sh, preds[len(preds)-1-rng.Intn(min(len(preds), 3))], pick(), pick())
			}
			names = append(names, name)
		}
		last := names[len(names)-1]
		side := names[4+rng.Intn(len(names)-4)]
		switch trial % 3 {
		case 0:
			fmt.Fprintf(&b, "  ROOT t = (%s, %s) tuple(%s, %s)\n}\n", sh, sh, last, side)
		case 1:
			out := "f64" + strings.ReplaceAll(fmt.Sprint(dims[:r-1]), " ", ",")
			fmt.Fprintf(&b, "  z = f64[] constant(0)\n  red = %s reduce(%s, z), dimensions={%d}, to_apply=sum\n", out, last, r-1)
			fmt.Fprintf(&b, "  ROOT t = (%s, %s) tuple(red, %s)\n}\n", out, sh, side)
		default:
			all := make([]string, r)
			for i := range all {
				all[i] = fmt.Sprint(i)
			}
			fmt.Fprintf(&b, "  z = f64[] constant(-inf)\n  ROOT red = f64[] reduce(%s, z), dimensions={%s}, to_apply=mx\n}\n", last, strings.Join(all, ","))
		}
		q := tensor.New(dtype.Pred, dims)
		for i := range q.Data {
			q.Data[i] = byte(rng.Intn(2))
		}
		if fusedVsOpByOp(t, b.String(), randomF64(rng, dims), randomF64(rng, dims), randomF64(rng, dims[r-1:]), randomF64(rng, nil), q) {
			fused++
		}
	}
	if fused < trials/2 {
		t.Errorf("only %d of %d modules had a fused group", fused, trials)
	}
}
