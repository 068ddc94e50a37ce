package hlo

import (
	"strings"
	"testing"
)

// raggedModule is a one-instruction module around a ragged-dot with the
// given operand shapes, result shape and attributes.
func raggedModule(lhs, rhs, gs, out, attrs string) string {
	return "HloModule m\n\nENTRY e {\n  a = " + lhs + " parameter(0)\n  b = " + rhs + " parameter(1)\n  g = " + gs +
		" parameter(2)\n  ROOT r = " + out + " ragged-dot(a, b, g), " + attrs + "\n}\n"
}

// TestRaggedDotShapes checks shape inference for the three modes and
// round-trips each module through the printer (the jax-generated programs in
// engine/eval's TestRaggedDotAgainstJax cover XLA's own printing).
func TestRaggedDotShapes(t *testing.T) {
	ok := []string{
		// Mode 1: the rhs group dim disappears from the result.
		raggedModule("f32[8,4]", "f32[3,4,5]", "s32[3]", "f32[8,5]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}"),
		raggedModule("bf16[2,7,4]", "bf16[2,4,3,5]", "s32[2,3]", "f32[2,7,5]",
			"lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, lhs_ragged_dims={1}, rhs_group_dims={2}"),
		// Mode 2: a leading group dim is added.
		raggedModule("f32[5,9]", "f32[9,4]", "s64[4]", "f32[4,5,4]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}"),
		// Mode 3: the dot's shape.
		raggedModule("f32[3,5,9]", "f32[3,9,4]", "s32[3]", "f32[3,5,4]",
			"lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, lhs_ragged_dims={0}"),
	}
	for i, src := range ok {
		m := roundTrip(t, "ok"+string(rune('0'+i)), []byte(src))
		if m != nil && m.Entry.Root.RaggedDims == nil {
			t.Errorf("case %d: ragged dims not parsed", i)
		}
	}
	bad := map[string]string{
		"no ragged dims": raggedModule("f32[8,4]", "f32[3,4,5]", "s32[3]", "f32[8,5]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
		"mode 1 without group dim": raggedModule("f32[8,4]", "f32[4,5]", "s32[3]", "f32[8,5]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={0}"),
		"mode 2 with group dim": raggedModule("f32[5,9]", "f32[4,9,4]", "s32[4]", "f32[4,5,4]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={1}, rhs_group_dims={0}"),
		"group count mismatch": raggedModule("f32[8,4]", "f32[3,4,5]", "s32[2]", "f32[8,5]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}"),
		"group dim contracted": raggedModule("f32[8,3]", "f32[3,5]", "s32[3]", "f32[8]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={0}, rhs_group_dims={0}"),
		"float group sizes": raggedModule("f32[8,4]", "f32[3,4,5]", "f32[3]", "f32[8,5]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}"),
		"group sizes prefix": raggedModule("f32[2,7,4]", "f32[2,3,4,5]", "s32[7,3]", "f32[2,7,5]",
			"lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}, lhs_ragged_dims={1}, rhs_group_dims={1}"),
		"ragged dim out of range": raggedModule("f32[8,4]", "f32[3,4,5]", "s32[3]", "f32[8,5]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={2}, rhs_group_dims={0}"),
		"wrong result": raggedModule("f32[5,9]", "f32[9,4]", "s32[4]", "f32[5,4]",
			"lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}"),
	}
	for name, src := range bad {
		m, err := ParseText([]byte(src), name)
		if err == nil {
			err = Verify(m)
		}
		t.Logf("%s: %v", name, err)
		if err == nil || !strings.Contains(err.Error(), "ragged") && name != "wrong result" {
			t.Errorf("%s: want a ragged-dot error, got %v", name, err)
		}
	}
}
