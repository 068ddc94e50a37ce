package golden

import (
	"bytes"
	"math"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// slicedAttention is causal attention over [4, 8] batch elements with a
// score matrix of 8 MB, its scores also returned (a region result read
// outside), the mask a [T, T] iota compare broadcast into the batch (read
// whole), a reduce of a row block the region keeps.
const slicedAttention = `HloModule sliced

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  q = f32[4,8,256,32] parameter(0)
  k = f32[4,8,256,32] parameter(1)
  v = f32[4,8,256,32] parameter(2)
  kt = f32[4,8,32,256] transpose(k), dimensions={0,1,3,2}
  s = f32[4,8,256,256] dot(q, kt), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  c = f32[] constant(0.125)
  cb = f32[4,8,256,256] broadcast(c), dimensions={}
  scaled = f32[4,8,256,256] multiply(s, cb)
  rows = s32[256,256] iota(), iota_dimension=0
  cols = s32[256,256] iota(), iota_dimension=1
  keep = pred[256,256] compare(rows, cols), direction=GE
  keepb = pred[4,8,256,256] broadcast(keep), dimensions={2,3}
  neg = f32[] constant(-1e9)
  negb = f32[4,8,256,256] broadcast(neg), dimensions={}
  masked = f32[4,8,256,256] select(keepb, scaled, negb)
  ninf = f32[] constant(-inf)
  mx = f32[4,8,256] reduce(masked, ninf), dimensions={3}, to_apply=max_f32
  mxb = f32[4,8,256,256] broadcast(mx), dimensions={0,1,2}
  sh = f32[4,8,256,256] subtract(masked, mxb)
  e = f32[4,8,256,256] exponential(sh)
  zero = f32[] constant(0)
  sum = f32[4,8,256] reduce(e, zero), dimensions={3}, to_apply=add_f32
  sumb = f32[4,8,256,256] broadcast(sum), dimensions={0,1,2}
  p = f32[4,8,256,256] divide(e, sumb)
  o = f32[4,8,256,32] dot(p, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ROOT t = (f32[4,8,256,32], f32[4,8,256,256]) tuple(o, s)
}
`

// TestSlicedRegionsKeepBits: the attention above becomes one sliced
// region (its transpose, mask and softmax inside), and the sliced run
// gives every bit of the unsliced one, on inputs with NaNs, infinities and
// subnormals among normal values.
func TestSlicedRegionsKeepBits(t *testing.T) {
	m, err := hlo.ParseText([]byte(slicedAttention), "sliced.hlo")
	if err != nil {
		t.Fatal(err)
	}
	lm, err := legalize(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sliced *hlo.Instruction
	for _, in := range lm.Entry.Instructions {
		if in.CustomCallTarget == eval.SlicedTarget {
			if sliced != nil {
				t.Fatalf("two sliced regions: %v", opcodes(lm.Entry))
			}
			sliced = in
		}
		if in.Opcode == "dot" || in.Opcode == "exponential" || in.Opcode == "reduce" {
			t.Errorf("%s %s left outside the region", in.Opcode, in.Name)
		}
	}
	if sliced == nil {
		t.Fatalf("no sliced region: %v", opcodes(lm.Entry))
	}
	if !strings.Contains(sliced.BackendConfig, `"lead":2`) {
		t.Errorf("config %s: want the two batch dims leading", sliced.BackendConfig)
	}
	args := normalF32Args(m, 5)
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-41, -3e-39, 0}
	for i, v := range specials {
		args[i%3].F32()[1000*i+7] = v
	}
	run := func(off bool) []*tensor.Tensor {
		defer func(v bool) { slicedOff = v }(slicedOff)
		slicedOff = off
		res, err := Run(m, args, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Outputs
	}
	with, without := run(false), run(true)
	if len(with) != 2 || len(without) != 2 {
		t.Fatalf("%d and %d outputs", len(with), len(without))
	}
	for i := range with {
		if !bytes.Equal(with[i].Data, without[i].Data) {
			t.Errorf("output %d: bits differ sliced", i)
		}
	}
}

// normalF32Args draws an f32 argument of normal values for each of m's
// entry parameters.
func normalF32Args(m *hlo.Module, seed int64) []*tensor.Tensor {
	r := rand.New(rand.NewSource(seed))
	var args []*tensor.Tensor
	for _, p := range m.Entry.Params {
		x := tensor.New(dtype.F32, p.Shape.Dims)
		for i := range x.F32() {
			x.F32()[i] = float32(r.NormFloat64())
		}
		args = append(args, x)
	}
	return args
}
