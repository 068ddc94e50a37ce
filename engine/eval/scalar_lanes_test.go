package eval

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// TestScalarLanesMatchOneElement holds runLanes (the f32 kernel steps of a
// scalar program computed for sixteen machines in one call, as map and
// prefix scans run them) to one machine at a time, bit for bit, for every
// unary op with a lane step, on values that stress the kernels' special
// cases: zeros, infinities, subnormals, overflow and underflow edges, the
// poles of log and log1p, NaNs (which runLanes hands to one-element calls)
// mixed into otherwise finite batches, and random bits.
func TestScalarLanesMatchOneElement(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 2, 88.72, 88.73, -87.3, -103.9, -104,
		89, -89, 1e-38, 1e-45, -1e-45, 1.17549435e-38, 3e38, -3e38, float32(math.Inf(1)), float32(math.Inf(-1)),
		-0.999999, -1.000001, 1e-8, -1e-8, 0.6931472, 1.5707964, 3.1415927, 1e4, -1e4, 15, -15, 9, -9}
	r := rand.New(rand.NewSource(17))
	var vals []float32
	for range 3 {
		vals = append(vals, specials...)
	}
	for range 600 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
		vals = append(vals, float32(r.NormFloat64()*10))
	}
	// Every fourth batch of sixteen gets a NaN (with a payload) somewhere.
	for b := 0; b*16 < len(vals); b += 4 {
		vals[b*16+r.Intn(16)%(len(vals)-b*16)] = math.Float32frombits(0x7fc00000 | r.Uint32()&0x3fffff)
	}
	x := tensor.New(dtype.F32, []int64{int64(len(vals))})
	copy(x.F32(), vals)
	laned := 0
	for _, op := range unaryOpcodes {
		src := fmt.Sprintf("HloModule m\n\ncomp {\n  p0 = f32[] parameter(0)\n  ROOT r = f32[] %s(p0)\n}\n\nENTRY e {\n  a = f32[%d] parameter(0)\n  ROOT m = f32[%d] map(a), dimensions={0}, to_apply=comp\n}\n", op, len(vals), len(vals))
		m, err := hlo.ParseText([]byte(src), "lanes.hlo")
		if err != nil {
			t.Fatal(err)
		}
		p, err := buildScalar(m.Computation("comp"))
		if err != nil || len(p.lanes) == 0 || p.lanes[len(p.lanes)-1] == nil {
			continue // not an f32 kernel step
		}
		laned++
		out := tensor.New(dtype.F32, x.Dims)
		if ok, err := scalarMap(p, []*tensor.Tensor{x}, out); !ok || err != nil {
			t.Fatalf("%s: scalarMap ok=%v err=%v", op, ok, err)
		}
		one := p.machine()
		xs := toRegs(x)
		for i := range vals {
			one.set(0, xs, int64(i))
			one.run()
			want := uint32(one.result(0)[0])
			if got := math.Float32bits(out.F32()[i]); got != want {
				t.Fatalf("%s(%g [%08x]): lanes %08x, one machine %08x", op, vals[i], math.Float32bits(vals[i]), got, want)
			}
		}
	}
	t.Logf("%d ops with lane steps", laned)
	if laned < 15 {
		t.Fatalf("only %d ops have lane steps", laned)
	}
}
