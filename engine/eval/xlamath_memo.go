package eval

import "sync"

// xlaUnaryF32Memo holds xlaUnaryF32's loop per op, made once: the loops
// are closures, and a small group in a loop body asks for one every step.
var xlaUnaryF32Memo sync.Map // op -> func(x, o []float32), nil included

// xlaUnaryF32Kept is xlaUnaryF32(op), the same loop every time.
func xlaUnaryF32Kept(op string) func(x, o []float32) {
	if f, ok := xlaUnaryF32Memo.Load(op); ok {
		return f.(func(x, o []float32))
	}
	f := xlaUnaryF32(op)
	xlaUnaryF32Memo.Store(op, f)
	return f
}
