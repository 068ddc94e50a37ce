//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// f32 add, subtract, multiply and divide a vector at a time. Each lane is
// the IEEE operation the scalar loop does (the same rounding, and the same
// NaN when both operands are NaN: TestBinaryF32VectorMatchesScalar), so
// the results are bit for bit the scalar loop's. One loop per op and width,
// so no loop decides its op per vector.

// binaryLanes is the vector width binaryF32Vector uses: 16 with AVX-512, 8
// with AVX2, 0 for none. Tests set it to each width the CPU runs.
var binaryLanes = defaultBinaryLanes()

func defaultBinaryLanes() int {
	switch {
	case archsimd.X86.AVX512():
		return 16
	case archsimd.X86.AVX2():
		return 8
	}
	return 0
}

// binaryLaneWidths is every width binaryLanes may take on this CPU.
func binaryLaneWidths() []int { return subnormalLaneWidths() }

// binaryF32Vector computes the whole vectors at the front of o and returns
// how many elements that was (0 when op has no vector form here).
func binaryF32Vector(op string, a, b, o []float32) int {
	if op == "maximum" || op == "minimum" {
		return minMaxF32Vector(op, a, b, o, false)
	}
	n := len(o)
	a, b = a[:n], b[:n]
	switch binaryLanes {
	case 16:
		switch op {
		case "add":
			return addF32X16(a, b, o)
		case "subtract":
			return subtractF32X16(a, b, o)
		case "multiply":
			return multiplyF32X16(a, b, o)
		case "divide":
			return divideF32X16(a, b, o)
		}
	case 8:
		switch op {
		case "add":
			return addF32X8(a, b, o)
		case "subtract":
			return subtractF32X8(a, b, o)
		case "multiply":
			return multiplyF32X8(a, b, o)
		case "divide":
			return divideF32X8(a, b, o)
		}
	}
	return 0
}

func addF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		x.Add(y).Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		x.Sub(y).Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		x.Mul(y).Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divideF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		x.Div(y).Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func addF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		x.Add(y).Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		x.Sub(y).Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		x.Mul(y).Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divideF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		x.Div(y).Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// signBitF32Vector sets o to x with the sign bit cleared (abs) or flipped
// (negate), as the scalar loop of fuseWorker.block does, over the whole
// vectors at the front, and returns how many elements that was.
func signBitF32Vector(abs bool, x, o []float32) int {
	n := len(o)
	x = x[:n]
	switch binaryLanes {
	case 16:
		n &^= 15
		m := archsimd.BroadcastUint32x16(1 << 31)
		for i := 0; i < n; i += 16 {
			v := archsimd.LoadFloat32x16((*[16]float32)(x[i:])).AsUint32x16()
			if abs {
				v = v.AndNot(m)
			} else {
				v = v.Xor(m)
			}
			v.AsFloat32x16().Store((*[16]float32)(o[i:]))
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 8:
		n &^= 7
		m := archsimd.BroadcastUint32x8(1 << 31)
		for i := 0; i < n; i += 8 {
			v := archsimd.LoadFloat32x8((*[8]float32)(x[i:])).AsUint32x8()
			if abs {
				v = v.AndNot(m)
			} else {
				v = v.Xor(m)
			}
			v.AsFloat32x8().Store((*[8]float32)(o[i:]))
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}

// fmaF32Vector sets o[i] = a[i]*b[i]+c[i] rounded once (VFMADD, what fma32
// computes) over the whole vectors at the front, and returns how many
// elements that was. A vector with a NaN result is redone by fma32, whose
// NaN payload (a's, then b's, then c's) VFMADD's operand order need not
// keep.
func fmaF32Vector(a, b, c, o []float32) int {
	n := len(o)
	a, b, c = a[:n], b[:n], c[:n]
	switch binaryLanes {
	case 16:
		n &^= 15
		for i := 0; i < n; i += 16 {
			x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
			y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
			z := archsimd.LoadFloat32x16((*[16]float32)(c[i:]))
			r := x.MulAdd(y, z)
			r.Store((*[16]float32)(o[i:]))
			if r.IsNaN().ToBits() != 0 {
				for k := i; k < i+16; k++ {
					o[k] = fma32(a[k], b[k], c[k])
				}
			}
		}
		archsimd.ClearAVXUpperBits()
		return n
	case 8:
		n &^= 7
		for i := 0; i < n; i += 8 {
			x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
			y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
			z := archsimd.LoadFloat32x8((*[8]float32)(c[i:]))
			r := x.MulAdd(y, z)
			r.Store((*[8]float32)(o[i:]))
			if r.IsNaN().ToBits() != 0 {
				for k := i; k < i+8; k++ {
					o[k] = fma32(a[k], b[k], c[k])
				}
			}
		}
		archsimd.ClearAVXUpperBits()
		return n
	}
	return 0
}

// binaryFTZF32Vector is binaryF32Vector followed by ftz on what it
// computed, in one pass: each result's subnormal is replaced by its signed
// zero in the register before the store. It returns how many elements that
// was (0 when op has no vector form here).
func binaryFTZF32Vector(op string, a, b, o []float32) int {
	if op == "maximum" || op == "minimum" {
		return minMaxF32Vector(op, a, b, o, true)
	}
	n := len(o)
	a, b = a[:n], b[:n]
	switch binaryLanes {
	case 16:
		switch op {
		case "add":
			return addFTZF32X16(a, b, o)
		case "subtract":
			return subtractFTZF32X16(a, b, o)
		case "multiply":
			return multiplyFTZF32X16(a, b, o)
		case "divide":
			return divideFTZF32X16(a, b, o)
		}
	case 8:
		switch op {
		case "add":
			return addFTZF32X8(a, b, o)
		case "subtract":
			return subtractFTZF32X8(a, b, o)
		case "multiply":
			return multiplyFTZF32X8(a, b, o)
		case "divide":
			return divideFTZF32X8(a, b, o)
		}
	}
	return 0
}

func addFTZF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x16(0x7fffffff), archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(0x007fffff)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		r := x.Add(y).AsUint32x16()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x16().Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractFTZF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x16(0x7fffffff), archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(0x007fffff)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		r := x.Sub(y).AsUint32x16()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x16().Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyFTZF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x16(0x7fffffff), archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(0x007fffff)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		r := x.Mul(y).AsUint32x16()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x16().Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divideFTZF32X16(a, b, o []float32) int {
	n := len(o) &^ 15
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x16(0x7fffffff), archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(0x007fffff)
	sign := archsimd.BroadcastUint32x16(0x80000000)
	for i := 0; i < n; i += 16 {
		x := archsimd.LoadFloat32x16((*[16]float32)(a[i:]))
		y := archsimd.LoadFloat32x16((*[16]float32)(b[i:]))
		r := x.Div(y).AsUint32x16()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x16().Store((*[16]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func addFTZF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastUint32x8(1), archsimd.BroadcastUint32x8(0x007fffff)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		r := x.Add(y).AsUint32x8()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x8().Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func subtractFTZF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastUint32x8(1), archsimd.BroadcastUint32x8(0x007fffff)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		r := x.Sub(y).AsUint32x8()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x8().Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func multiplyFTZF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastUint32x8(1), archsimd.BroadcastUint32x8(0x007fffff)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		r := x.Mul(y).AsUint32x8()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x8().Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

func divideFTZF32X8(a, b, o []float32) int {
	n := len(o) &^ 7
	a, b = a[:n], b[:n]
	abs, one, lim := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastUint32x8(1), archsimd.BroadcastUint32x8(0x007fffff)
	sign := archsimd.BroadcastUint32x8(0x80000000)
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(a[i:]))
		y := archsimd.LoadFloat32x8((*[8]float32)(b[i:]))
		r := x.Div(y).AsUint32x8()
		sub := r.And(abs).Sub(one).Less(lim)
		r.And(sign).Merge(r, sub).AsFloat32x8().Store((*[8]float32)(o[i:]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
