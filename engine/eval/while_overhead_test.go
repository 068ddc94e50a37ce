package eval

import (
	"fmt"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// BenchmarkWhileStepOverhead runs 1000 steps of a body of 40 small
// elementwise ops on [8,16] values: what a step costs beyond its arithmetic
// (the interpreter's bookkeeping, allocation), reported per step.
func BenchmarkWhileStepOverhead(bm *testing.B) {
	var b strings.Builder
	b.WriteString("HloModule m\nbody {\n  s = (s32[], f32[8,16]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n" +
		"  x0 = f32[8,16] get-tuple-element(s), index=1\n  c = f32[] constant(0.999)\n  cb = f32[8,16] broadcast(c), dimensions={}\n")
	for k := 1; k <= 40; k++ {
		op := []string{"multiply", "add", "maximum", "subtract"}[k%4]
		fmt.Fprintf(&b, "  x%d = f32[8,16] %s(x%d, cb)\n", k, op, k-1)
	}
	b.WriteString("  i1 = s32[] add(i, s32[] constant(1))\n  ROOT t = (s32[], f32[8,16]) tuple(i1, x40)\n}\n" +
		"cond {\n  s = (s32[], f32[8,16]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n" +
		"  ROOT lt = pred[] compare(i, s32[] constant(1000)), direction=LT\n}\n" +
		"ENTRY e {\n  x = f32[8,16] parameter(0)\n  z = s32[] constant(0)\n  s0 = (s32[], f32[8,16]) tuple(z, x)\n" +
		"  w = (s32[], f32[8,16]) while(s0), condition=cond, body=body\n  ROOT r = f32[8,16] get-tuple-element(w), index=1\n}\n")
	m, err := hlo.ParseText([]byte(b.String()), "overhead.hlo")
	if err != nil {
		bm.Fatal(err)
	}
	x := tensor.New(dtype.F32, []int64{8, 16})
	for i := range x.F32() {
		x.F32()[i] = float32(i)
	}
	bm.ReportAllocs()
	bm.ResetTimer()
	for range bm.N {
		if _, err := Evaluate(m, []Value{ArrayValue(x)}, Options{}); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(float64(bm.Elapsed().Nanoseconds())/float64(bm.N)/1000, "ns/step")
}
