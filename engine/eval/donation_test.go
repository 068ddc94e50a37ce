package eval

import (
	"fmt"
	"math"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// TestUpdatesWriteIntoDyingOperands checks that a scatter or a
// dynamic-update-slice writes into its operand exactly when the frame alone
// holds that operand and this is its last use (a fresh broadcast, as
// jnp.zeros(...).at[i].add(w) lowers), and that the results are right either
// way: an operand read again later, a parameter and the root keep their
// values.
func TestUpdatesWriteIntoDyingOperands(t *testing.T) {
	const head = `HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

`
	x := tensor.New(dtype.F32, []int64{4, 3})
	for i := range x.F32() {
		x.F32()[i] = float32(i)
	}
	idx := tensor.New(dtype.S32, []int64{3, 1})
	copy(idx.I32(), []int32{2, 0, 2})
	upd := tensor.New(dtype.F32, []int64{3, 3})
	for i := range upd.F32() {
		upd.F32()[i] = float32(10 * (i + 1))
	}
	row := tensor.New(dtype.F32, []int64{1, 3})
	copy(row.F32(), []float32{-1, -2, -3})
	start := tensor.New(dtype.S32, nil)
	start.I32()[0] = 1
	// scattered(base) adds upd's rows to rows 2, 0, 2 of base.
	scattered := func(base []float32) []float32 {
		out := append([]float32(nil), base...)
		for b, r := range []int{2, 0, 2} {
			for j := 0; j < 3; j++ {
				out[r*3+j] += upd.F32()[b*3+j]
			}
		}
		return out
	}
	zeros := make([]float32, 12)
	scatter := `scatter(%s, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add`
	cases := []struct {
		name, body string
		donated    bool
		want       [][]float32
	}{
		{"fresh_broadcast", "  z = f32[] constant(0)\n  b = f32[4,3] broadcast(z), dimensions={}\n  ROOT s = f32[4,3] " + sprintf(scatter, "b"),
			true, [][]float32{scattered(zeros)}},
		{"fresh_negate", "  n = f32[4,3] negate(x)\n  ROOT s = f32[4,3] " + sprintf(scatter, "n"),
			true, [][]float32{scattered(negated(x.F32()))}},
		{"read_again", "  n = f32[4,3] negate(x)\n  s = f32[4,3] " + sprintf(scatter, "n") + "\n  ROOT t = (f32[4,3], f32[4,3]) tuple(s, n)",
			false, [][]float32{scattered(negated(x.F32())), negated(x.F32())}},
		{"parameter", "  ROOT s = f32[4,3] " + sprintf(scatter, "x"), false, [][]float32{scattered(x.F32())}},
		{"dus_fresh", "  n = f32[4,3] negate(x)\n  z = s32[] constant(0)\n  ROOT d = f32[4,3] dynamic-update-slice(n, r, st, z)",
			true, [][]float32{dusRow(negated(x.F32()), 1, row.F32())}},
		{"dus_read_again", "  n = f32[4,3] negate(x)\n  z = s32[] constant(0)\n  d = f32[4,3] dynamic-update-slice(n, r, st, z)\n  ROOT t = (f32[4,3], f32[4,3]) tuple(d, n)",
			false, [][]float32{dusRow(negated(x.F32()), 1, row.F32()), negated(x.F32())}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := head + "ENTRY e {\n  x = f32[4,3] parameter(0)\n  i = s32[3,1] parameter(1)\n  u = f32[3,3] parameter(2)\n  r = f32[1,3] parameter(3)\n  st = s32[] parameter(4)\n" + c.body + "\n}\n"
			m, err := hlo.ParseText([]byte(src), "donation.hlo")
			if err != nil {
				t.Fatal(err)
			}
			xin := x.Clone()
			before := donationsTaken.Load()
			v, err := Evaluate(m, []Value{ArrayValue(xin), ArrayValue(idx), ArrayValue(upd), ArrayValue(row), ArrayValue(start)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if took := donationsTaken.Load() > before; took != c.donated {
				t.Errorf("donation taken %v, want %v", took, c.donated)
			}
			leaves := v.Leaves()
			if len(leaves) != len(c.want) {
				t.Fatalf("%d results, want %d", len(leaves), len(c.want))
			}
			for k, w := range c.want {
				for i, g := range leaves[k].F32() {
					if math.Float32bits(g) != math.Float32bits(w[i]) {
						t.Fatalf("result %d element %d = %g, want %g", k, i, g, w[i])
					}
				}
			}
			for i, g := range xin.F32() {
				if g != x.F32()[i] {
					t.Fatalf("parameter element %d changed to %g", i, g)
				}
			}
		})
	}
}

func sprintf(format, arg string) string { return fmt.Sprintf(format, arg) }

func negated(xs []float32) []float32 {
	out := make([]float32, len(xs))
	for i, v := range xs {
		out[i] = -v
	}
	return out
}

func dusRow(base []float32, r int, row []float32) []float32 {
	out := append([]float32(nil), base...)
	copy(out[r*3:], row)
	return out
}
