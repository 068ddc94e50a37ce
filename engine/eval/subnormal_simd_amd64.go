//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// The f32 subnormal scans of daz/ftz, a vector at a time: 16 lanes with
// AVX-512, 8 with AVX2. A bit pattern b is subnormal when (b&0x7fffffff)-1,
// as an unsigned number, is below 0x7fffff (magnitude in [1, 0x7fffff]);
// a run of four vectors is tested with one compare of the lanes' unsigned
// minimum of that, so a subnormal-free run (the common case) costs an and,
// a subtract and a min per vector.

// subnormalLanes is the vector width the scans use: 16, 8, or 0 (scalar).
// Tests set it to each width the CPU runs.
var subnormalLanes = defaultSubnormalLanes()

func defaultSubnormalLanes() int {
	switch {
	case archsimd.X86.AVX512():
		return 16
	case archsimd.X86.AVX2():
		return 8
	}
	return 0
}

// subnormalLaneWidths is every width subnormalLanes may take on this CPU.
func subnormalLaneWidths() []int {
	var ws []int
	if archsimd.X86.AVX512() {
		ws = append(ws, 16)
	}
	if archsimd.X86.AVX2() {
		ws = append(ws, 8)
	}
	return append(ws, 0)
}

// scanSubnormal returns (i, true) when xs[i:i+64] holds the first
// subnormal of xs, else (n, false) with xs[:n] free of subnormals (n is the
// whole vectors of xs; the rest is the caller's to test).
func scanSubnormal(xs []uint32) (int, bool) {
	switch subnormalLanes {
	case 16:
		return scanSubnormalX16(xs)
	case 8:
		return scanSubnormalX8(xs)
	}
	return 0, false
}

func scanSubnormalX16(xs []uint32) (int, bool) {
	if len(xs) < 16 {
		return 0, false
	}
	p := u32Base(xs, len(xs))
	abs, one, lim := archsimd.BroadcastUint32x16(0x7fffffff), archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(0x007fffff)
	i := 0
	for ; i+64 <= len(xs); i += 64 {
		a := loadUint32x16(p, 4*i).And(abs).Sub(one)
		b := loadUint32x16(p, 4*i+64).And(abs).Sub(one)
		c := loadUint32x16(p, 4*i+128).And(abs).Sub(one)
		d := loadUint32x16(p, 4*i+192).And(abs).Sub(one)
		if a.Min(b).Min(c.Min(d)).Less(lim).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	for ; i+16 <= len(xs); i += 16 {
		if loadUint32x16(p, 4*i).And(abs).Sub(one).Less(lim).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	archsimd.ClearAVXUpperBits()
	return i, false
}

func scanSubnormalX8(xs []uint32) (int, bool) {
	if len(xs) < 8 {
		return 0, false
	}
	p := u32Base(xs, len(xs))
	abs, one, lim := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastUint32x8(1), archsimd.BroadcastUint32x8(0x007fffff)
	i := 0
	for ; i+32 <= len(xs); i += 32 {
		a := loadUint32x8(p, 4*i).And(abs).Sub(one)
		b := loadUint32x8(p, 4*i+32).And(abs).Sub(one)
		c := loadUint32x8(p, 4*i+64).And(abs).Sub(one)
		d := loadUint32x8(p, 4*i+96).And(abs).Sub(one)
		if a.Min(b).Min(c.Min(d)).Less(lim).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	for ; i+8 <= len(xs); i += 8 {
		if loadUint32x8(p, 4*i).And(abs).Sub(one).Less(lim).ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return i, true
		}
	}
	archsimd.ClearAVXUpperBits()
	return i, false
}

// firstSubnormalBits32 is firstSubnormal on f32 bit patterns.
func firstSubnormalBits32(xs []uint32) int {
	i := 0
	for {
		j, found := scanSubnormal(xs[i:])
		i += j
		if !found {
			break
		}
		for k, b := range xs[i:min(i+64, len(xs))] {
			if b&0x7fffffff-1 < 0x007fffff {
				return i + k
			}
		}
		i += 64 // not reached: the run scanned holds one
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
	for {
		j, found := scanSubnormal(xs[i:])
		i += j
		if !found {
			break
		}
		e := min(i+64, len(xs))
		for k := i; k < e; k++ {
			if xs[k]&0x7fffffff-1 < 0x007fffff {
				xs[k] &= 0x80000000
			}
		}
		i = e
	}
	for ; i < len(xs); i++ {
		if xs[i]&0x7fffffff-1 < 0x007fffff {
			xs[i] &= 0x80000000
		}
	}
}

// scanSubnormalOrSNaN returns (n, true) when xs[:n] (whole vectors) has no
// subnormal and no signaling NaN, else (_, false): complexClean's test of
// complex64 parts, a vector at a time.
func scanSubnormalOrSNaN(xs []uint32) (int, bool) {
	switch subnormalLanes {
	case 16:
		abs, one, lim := archsimd.BroadcastUint32x16(0x7fffffff), archsimd.BroadcastUint32x16(1), archsimd.BroadcastUint32x16(0x007fffff)
		snan, slim := archsimd.BroadcastUint32x16(0x7f800001), archsimd.BroadcastUint32x16(0x3fffff)
		i := 0
		for ; i+16 <= len(xs); i += 16 {
			u := archsimd.LoadUint32x16((*[16]uint32)(xs[i:])).And(abs)
			if u.Sub(one).Less(lim).ToBits()|u.Sub(snan).Less(slim).ToBits() != 0 {
				archsimd.ClearAVXUpperBits()
				return i, false
			}
		}
		archsimd.ClearAVXUpperBits()
		return i, true
	case 8:
		abs, one, lim := archsimd.BroadcastUint32x8(0x7fffffff), archsimd.BroadcastUint32x8(1), archsimd.BroadcastUint32x8(0x007fffff)
		snan, slim := archsimd.BroadcastUint32x8(0x7f800001), archsimd.BroadcastUint32x8(0x3fffff)
		i := 0
		for ; i+8 <= len(xs); i += 8 {
			u := archsimd.LoadUint32x8((*[8]uint32)(xs[i:])).And(abs)
			if u.Sub(one).Less(lim).ToBits()|u.Sub(snan).Less(slim).ToBits() != 0 {
				archsimd.ClearAVXUpperBits()
				return i, false
			}
		}
		archsimd.ClearAVXUpperBits()
		return i, true
	}
	return 0, true
}
