package eval

import (
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// A chain of dots keeps two values live at a time (operand and result):
// each dies after its last user, and a tuple of one value counts it once.
func TestMemoryStatsPeakOfChain(t *testing.T) {
	const src = `HloModule m
ENTRY e {
  p = f32[32,32] parameter(0)
  r1 = f32[32,32] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r2 = f32[32,32] dot(r1, r1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r3 = f32[32,32] dot(r2, r2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[32,32], f32[32,32]) tuple(r3, r3)
}`
	m, err := hlo.ParseText([]byte(src), "mem.hlo")
	if err != nil {
		t.Fatal(err)
	}
	var stats MemoryStats
	x := tensor.New(dtype.F32, []int64{32, 32})
	if _, err := Evaluate(m, []Value{ArrayValue(x)}, Options{Memory: &stats}); err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * 4 * 1024); stats.Peak != want {
		t.Fatalf("peak live bytes %d, want %d (operand and result of one dot)", stats.Peak, want)
	}
	if stats.live != 0 || len(stats.refs) != 0 {
		t.Fatalf("after the run %d bytes (%d buffers) still counted live", stats.live, len(stats.refs))
	}
}
