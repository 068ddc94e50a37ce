package golden

import (
	"bytes"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// TestDotTransposeFold: a transpose feeding an f32 dot that YNNPACK takes
// is folded into the dot when the plan stays the same, and left alone
// otherwise (the lhs transposed, a second reader, free dims reordered);
// folded or not, every result bit is the same.
func TestDotTransposeFold(t *testing.T) {
	probe, err := hlo.ParseText([]byte(`HloModule p

ENTRY main {
  a = f32[64,96] parameter(0)
  b = f32[96,48] parameter(1)
  ROOT d = f32[64,48] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
`), "probe.hlo")
	if err != nil {
		t.Fatal(err)
	}
	if !eval.SameYNNDot(probe.Entry.Root, probe.Entry.Root) {
		t.Skip("no YNNPACK dot order on this build or host")
	}
	cases := []struct {
		name   string
		body   string
		folded bool
	}{
		{"x @ w.T", `
  x = f32[64,96] parameter(0)
  w = f32[48,96] parameter(1)
  wt = f32[96,48] transpose(w), dimensions={1,0}
  ROOT d = f32[64,48] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}`, true},
		{"q @ k.swapaxes", `
  q = f32[4,32,16] parameter(0)
  k = f32[4,40,16] parameter(1)
  kt = f32[4,16,40] transpose(k), dimensions={0,2,1}
  ROOT d = f32[4,32,40] dot(q, kt), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}`, true},
		{"lhs transposed", `
  a = f32[96,64] parameter(0)
  b = f32[96,48] parameter(1)
  at = f32[64,96] transpose(a), dimensions={1,0}
  ROOT d = f32[64,48] dot(at, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}`, false},
		{"transpose read twice", `
  x = f32[64,96] parameter(0)
  w = f32[48,96] parameter(1)
  wt = f32[96,48] transpose(w), dimensions={1,0}
  d = f32[64,48] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[64,48], f32[96,48]) tuple(d, wt)`, false},
		{"free dims reordered", `
  x = f32[10,32] parameter(0)
  w = f32[32,8,6] parameter(1)
  wt = f32[32,6,8] transpose(w), dimensions={0,2,1}
  ROOT d = f32[10,6,8] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}`, false},
		{"f64 x @ w.T", `
  x = f64[64,1100] parameter(0)
  w = f64[48,1100] parameter(1)
  wt = f64[1100,48] transpose(w), dimensions={1,0}
  ROOT d = f64[64,48] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte("HloModule m\n\nENTRY main {" + tc.body + "\n}\n")
			m, err := hlo.ParseText(src, "fold.hlo")
			if err != nil {
				t.Fatal(err)
			}
			lm, err := legalize(m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			transposes := 0
			for _, in := range lm.Entry.Instructions {
				if in.Opcode == "transpose" {
					transposes++
				}
			}
			if folded := transposes == 0; folded != tc.folded {
				t.Fatalf("folded %v, want %v: %v", folded, tc.folded, opcodes(lm.Entry))
			}
			args := normalF32Args(m, 7)
			run := func(off bool) []*tensor.Tensor {
				defer func(v bool) { dotFoldOff = v }(dotFoldOff)
				dotFoldOff = off
				m, err := hlo.ParseText(src, "fold.hlo")
				if err != nil {
					t.Fatal(err)
				}
				res, err := Run(m, args, Options{})
				if err != nil {
					t.Fatal(err)
				}
				return res.Outputs
			}
			with, without := run(false), run(true)
			for i := range with {
				if !bytes.Equal(with[i].Data, without[i].Data) {
					t.Errorf("output %d: bits differ with the transpose folded", i)
				}
			}
		})
	}
}

// normalF32Args draws an argument of normal values for each of m's entry
// parameters: f64 for an f64 parameter, else f32.
func normalF32Args(m *hlo.Module, seed int64) []*tensor.Tensor {
	r := rand.New(rand.NewSource(seed))
	var args []*tensor.Tensor
	for _, p := range m.Entry.Params {
		if p.Shape.Elem == dtype.F64 {
			x := tensor.New(dtype.F64, p.Shape.Dims)
			for i := range x.F64() {
				x.F64()[i] = r.NormFloat64()
			}
			args = append(args, x)
			continue
		}
		x := tensor.New(dtype.F32, p.Shape.Dims)
		for i := range x.F32() {
			x.F32()[i] = float32(r.NormFloat64())
		}
		args = append(args, x)
	}
	return args
}
