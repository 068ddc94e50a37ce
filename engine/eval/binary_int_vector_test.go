package eval

import (
	"math/rand"
	"testing"
)

// naiveInt32 is the meaning of each 32-bit op written out (XLA's: counts
// read as unsigned, shifts by 32 or more give 0, or the sign for the
// arithmetic shift), the reference for binaryInt32 beside binaryInt's loop.
func naiveInt32(op string, signed bool, a, b uint32) uint32 {
	switch op {
	case "add":
		return a + b
	case "subtract":
		return a - b
	case "multiply":
		return uint32(uint64(a) * uint64(b))
	case "and":
		return a & b
	case "or":
		return a | b
	case "xor":
		return a ^ b
	case "shift-left":
		if b >= 32 {
			return 0
		}
		return a << b
	case "shift-right-logical":
		if b >= 32 {
			return 0
		}
		return a >> b
	case "shift-right-arithmetic":
		if b >= 32 {
			b = 31
		}
		return uint32(int32(a) >> b)
	}
	panic(op)
}

// binaryInt32 (vectors of every width this CPU runs, then binaryInt's loop)
// against binaryInt's loop alone and the naive meaning, s32 and u32, at
// every length up to a few vectors, with shift counts in and out of range.
func TestBinaryInt32VectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(32))
	val := func() uint32 {
		switch rng.Intn(4) {
		case 0:
			return uint32(rng.Intn(70))
		case 1:
			return []uint32{0, 1, 31, 32, 33, 0x7fffffff, 0x80000000, 0xffffffff, 0xffffffe0}[rng.Intn(9)]
		}
		return rng.Uint32()
	}
	ops := []string{"add", "subtract", "multiply", "and", "or", "xor", "shift-left", "shift-right-logical",
		"shift-right-arithmetic"}
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for _, op := range ops {
			for _, signed := range []bool{false, true} {
				for n := 0; n < 70; n++ {
					a, b := make([]uint32, n), make([]uint32, n)
					for i := range a {
						a[i], b[i] = val(), val()
					}
					got, want := make([]uint32, n), make([]uint32, n)
					binaryInt32(op, signed, a, b, got)
					if signed {
						binaryInt(op, asSigned32(a), asSigned32(b), asSigned32(want), 32)
					} else {
						binaryInt(op, a, b, want, 32)
					}
					for i := range got {
						if got[i] != want[i] || got[i] != naiveInt32(op, signed, a[i], b[i]) {
							t.Fatalf("lanes %d %s signed=%v n=%d [%d]: %#x op %#x = %#x, loop %#x, naive %#x",
								lanes, op, signed, n, i, a[i], b[i], got[i], want[i], naiveInt32(op, signed, a[i], b[i]))
						}
					}
				}
			}
		}
	}
}
