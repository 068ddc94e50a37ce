package eval

import (
	"math"
	"math/rand"
	"testing"
	"unsafe"
)

// oldDazComplex is dazComplex's per-element loop alone (without the
// complexClean shortcut), the reference.
func oldDazComplex[C cplx](xs []C) []C {
	out := append([]C(nil), xs...)
	for i, v := range xs {
		z := complex128(v)
		re, im := flushPart[C](real(z)), flushPart[C](imag(z))
		if re != real(z) || im != imag(z) || (re == 0 && math.Signbit(re) != math.Signbit(real(z))) {
			out[i] = C(complex(re, im))
		}
	}
	return out
}

func bitsOf[C cplx](xs []C) string {
	if len(xs) == 0 {
		return ""
	}
	var z C
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(z))))
}

// dazComplex and ftzComplex with the clean-input shortcut give the bits of
// the per-element loops on parts that are normal, zero, infinite, quiet
// and signaling NaNs and subnormals, complex64 and complex128.
func TestComplexFlushShortcut(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	part32 := func() float32 {
		switch rng.Intn(10) {
		case 0:
			return math.Float32frombits(rng.Uint32()&0x807fffff | 0x00000001) // subnormal
		case 1:
			return math.Float32frombits(0x7f800001 | rng.Uint32()&0x803fffff) // signaling NaN
		case 2:
			return math.Float32frombits(0x7fc00000 | rng.Uint32()&0x803fffff) // quiet NaN
		case 3:
			return float32(math.Copysign(0, float64(rng.Intn(2)*2-1)))
		case 4:
			return float32(math.Inf(rng.Intn(2)*2 - 1))
		}
		return float32(rng.NormFloat64())
	}
	part64 := func() float64 {
		switch rng.Intn(10) {
		case 0:
			return math.Float64frombits(rng.Uint64()&0x800fffffffffffff | 1)
		case 1:
			return math.Float64frombits(0x7ff0000000000001 | rng.Uint64()&0x8007ffffffffffff)
		case 2:
			return math.Float64frombits(0x7ff8000000000000 | rng.Uint64()&0x8007ffffffffffff)
		case 3:
			return math.Copysign(0, float64(rng.Intn(2)*2-1))
		}
		return rng.NormFloat64()
	}
	for trial := 0; trial < 400; trial++ {
		n := rng.Intn(40)
		rare := trial%2 == 0 // mostly clean arrays, so the shortcut is taken
		a := make([]complex64, n)
		b := make([]complex128, n)
		for i := range a {
			if rare && rng.Intn(30) != 0 {
				a[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
				b[i] = complex(rng.NormFloat64(), rng.NormFloat64())
				continue
			}
			a[i] = complex(part32(), part32())
			b[i] = complex(part64(), part64())
		}
		if bitsOf(dazComplex(a)) != bitsOf(oldDazComplex(a)) {
			t.Fatalf("complex64 daz differs on %v", a)
		}
		if bitsOf(dazComplex(b)) != bitsOf(oldDazComplex(b)) {
			t.Fatalf("complex128 daz differs on %v", b)
		}
		fa, fb := append([]complex64(nil), a...), append([]complex128(nil), b...)
		ftzComplex(fa)
		ftzComplex(fb)
		// ftzComplex's loop writes where a part changed, as daz's does.
		if bitsOf(fa) != bitsOf(oldDazComplex(a)) || bitsOf(fb) != bitsOf(oldDazComplex(b)) {
			t.Fatalf("ftz differs on %v / %v", a, b)
		}
	}
}
