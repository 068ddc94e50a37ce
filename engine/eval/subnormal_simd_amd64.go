//go:build goexperiment.simd && amd64

package eval

import (
	"math/bits"
	"simd/archsimd"
)

// The f32 subnormal scans of daz/ftz, 8 lanes at a time (AVX2): a lane is
// subnormal when its exponent bits are 0 and its mantissa bits are not.

var subnormalSIMD = archsimd.X86.AVX2()

// subnormalMask returns the lanes of v that are subnormal, given the
// exponent and mantissa masks and zero.
func subnormalMask(v, expo, mant, zero archsimd.Uint32x8) uint8 {
	return v.And(expo).Equal(zero).ToBits() &^ v.And(mant).Equal(zero).ToBits()
}

func subnormalConsts() (expo, mant, zero archsimd.Uint32x8) {
	return archsimd.BroadcastUint32x8(0x7f800000), archsimd.BroadcastUint32x8(0x007fffff), archsimd.BroadcastUint32x8(0)
}

// firstSubnormalBits32 is firstSubnormal on f32 bit patterns.
func firstSubnormalBits32(xs []uint32) int {
	i := 0
	if subnormalSIMD {
		expo, mant, zero := subnormalConsts()
		for ; i+8 <= len(xs); i += 8 {
			if m := subnormalMask(archsimd.LoadUint32x8((*[8]uint32)(xs[i:])), expo, mant, zero); m != 0 {
				return i + bits.TrailingZeros8(m)
			}
		}
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffff-1 < 0x007fffff {
			return i
		}
	}
	return -1
}

// ftzBits32 is ftz on f32 bit patterns.
func ftzBits32(xs []uint32) {
	i := 0
	if subnormalSIMD {
		expo, mant, zero := subnormalConsts()
		for ; i+8 <= len(xs); i += 8 {
			v := archsimd.LoadUint32x8((*[8]uint32)(xs[i:]))
			if subnormalMask(v, expo, mant, zero) == 0 {
				continue
			}
			for k := i; k < i+8; k++ {
				if xs[k]&0x7fffffff-1 < 0x007fffff {
					xs[k] &= 0x80000000
				}
			}
		}
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffff-1 < 0x007fffff {
			xs[i] &= 0x80000000
		}
	}
}
