package eval

import (
	"math/rand"
	"testing"
	"unsafe"
)

// naiveDivInt32 is XLA's integer divide and remainder written out in 64-bit
// arithmetic: x/0 is all ones and x%0 is x; s32 INT_MIN/-1 wraps to INT_MIN
// and its remainder is 0.
func naiveDivInt32(op string, signed bool, a, b uint32) uint32 {
	if b == 0 {
		if op == "divide" {
			return ^uint32(0)
		}
		return a
	}
	if signed {
		x, y := int64(int32(a)), int64(int32(b))
		if op == "divide" {
			return uint32(x / y)
		}
		return uint32(x % y)
	}
	if op == "divide" {
		return a / b
	}
	return a % b
}

// divInt32Case draws a dividend and divisor pair that stresses the f64
// quotient: exact multiples and their neighbours (where a rounding error
// would cross an integer), extreme values, zero and ±1 divisors.
func divInt32Case(rng *rand.Rand) (uint32, uint32) {
	special := []uint32{0, 1, 2, 3, 0x7fffffff, 0x80000000, 0x80000001, 0xffffffff, 0xfffffffe, 0xfffffffd}
	var b uint32
	switch rng.Intn(5) {
	case 0:
		b = special[rng.Intn(len(special))]
	case 1:
		b = uint32(rng.Intn(2000)) - 1000
	case 2:
		b = uint32(rng.Intn(1 << 16))
	default:
		b = rng.Uint32()
	}
	var a uint32
	switch rng.Intn(4) {
	case 0:
		a = special[rng.Intn(len(special))]
	case 1:
		// a multiple of b and its neighbours, in both signed and unsigned
		// readings of the bits
		a = b*rng.Uint32()>>uint(rng.Intn(32)) + uint32(rng.Intn(3)) - 1
	case 2:
		a = b*uint32(rng.Intn(1<<16)) + uint32(rng.Intn(3)) - 1
	default:
		a = rng.Uint32()
	}
	return a, b
}

// The vector divide and remainder (GOEXPERIMENT=simd: f64 lanes) against
// binaryInt's loop and the naive meaning, s32 and u32, every vector width
// this CPU runs, every length up to a few vectors and 200k random pairs.
func TestDivInt32VectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(7))
	fixed := [][2]uint32{{0x80000000, 0xffffffff}, {0x80000000, 1}, {0x7fffffff, 0xffffffff}, {5, 0},
		{0x80000000, 0}, {0xffffffff, 0}, {0, 0}, {0xffffffff, 0xffffffff}, {0xfffffffe, 0xffffffff},
		{0xffffffff, 0xfffffffe}, {0x7fffffff, 0x80000000}, {0xfffffff9, 2}, {7, 0xfffffffe}}
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for _, op := range []string{"divide", "remainder"} {
			for _, signed := range []bool{false, true} {
				for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 200000} {
					a, b := make([]uint32, n), make([]uint32, n)
					for i := range a {
						if i < len(fixed) && n < 1000 {
							a[i], b[i] = fixed[i][0], fixed[i][1]
							continue
						}
						a[i], b[i] = divInt32Case(rng)
					}
					got, want := make([]uint32, n), make([]uint32, n)
					binaryInt32(op, signed, a, b, got)
					if signed {
						binaryInt(op, asSigned32(a), asSigned32(b), asSigned32(want), 32)
					} else {
						binaryInt(op, a, b, want, 32)
					}
					for i := range got {
						if nv := naiveDivInt32(op, signed, a[i], b[i]); got[i] != want[i] || got[i] != nv {
							t.Fatalf("lanes %d %s signed=%v n=%d [%d]: %#x op %#x = %#x, loop %#x, naive %#x",
								lanes, op, signed, n, i, a[i], b[i], got[i], want[i], nv)
						}
					}
				}
			}
		}
	}
}

// The vector sign, negate, abs and not against unaryInt's loop at width 32.
func TestUnaryInt32VectorMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(8))
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		for _, op := range []string{"sign", "negate", "abs", "not"} {
			for _, signed := range []bool{false, true} {
				for n := 0; n < 70; n++ {
					x := make([]uint32, n)
					for i := range x {
						switch rng.Intn(3) {
						case 0:
							x[i] = []uint32{0, 1, 0x7fffffff, 0x80000000, 0x80000001, 0xffffffff}[rng.Intn(6)]
						default:
							x[i] = rng.Uint32()
						}
					}
					got, want := make([]uint32, n), make([]uint32, n)
					unaryInt32(op, signed, x, got)
					if signed {
						unaryInt(op, asSigned32(x), asSigned32(want), 32)
					} else {
						unaryInt(op, x, want, 32)
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("lanes %d %s signed=%v n=%d [%d]: %#x -> %#x, loop %#x", lanes, op, signed, n, i, x[i], got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// divNarrowMatches checks divNarrow against binaryInt's loop for one type
// on the pairs (a[i], b[i]).
func divNarrowMatches[T integer](t *testing.T, name string, a, b []T) {
	t.Helper()
	for _, op := range []string{"divide", "remainder"} {
		got, want := make([]T, len(a)), make([]T, len(a))
		divNarrow(op, a, b, got)
		binaryInt(op, a, b, want, 8*int(unsafe.Sizeof(a[0])))
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s %s: %v op %v = %v, loop %v", name, op, a[i], b[i], got[i], want[i])
			}
		}
	}
}

// 8- and 16-bit divide and remainder at width 32 (divNarrow) against
// binaryInt's loop: every s8 and u8 pair, and s16/u16 edges plus random
// pairs, at every vector width this CPU runs.
func TestDivNarrowMatchesScalar(t *testing.T) {
	saved := binaryLanes
	defer func() { binaryLanes = saved }()
	rng := rand.New(rand.NewSource(16))
	for _, lanes := range binaryLaneWidths() {
		binaryLanes = lanes
		var a8, b8 []int8
		var ua8, ub8 []uint8
		for x := range 256 {
			for y := range 256 {
				a8, b8 = append(a8, int8(x)), append(b8, int8(y))
				ua8, ub8 = append(ua8, uint8(x)), append(ub8, uint8(y))
			}
		}
		divNarrowMatches(t, "s8", a8, b8)
		divNarrowMatches(t, "u8", ua8, ub8)
		edges := []uint16{0, 1, 2, 3, 0x7fff, 0x8000, 0x8001, 0xffff, 0xfffe, 255, 256}
		var a16, b16 []int16
		var ua16, ub16 []uint16
		for i := range 100000 {
			x, y := uint16(rng.Uint32()), uint16(rng.Uint32())
			if i < len(edges)*len(edges) {
				x, y = edges[i/len(edges)], edges[i%len(edges)]
			} else if i%3 == 0 {
				y = uint16(rng.Intn(20)) - 10
			}
			a16, b16 = append(a16, int16(x)), append(b16, int16(y))
			ua16, ub16 = append(ua16, x), append(ub16, y)
		}
		divNarrowMatches(t, "s16", a16, b16)
		divNarrowMatches(t, "u16", ua16, ub16)
	}
}
