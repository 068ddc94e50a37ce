//go:build goexperiment.simd && amd64

package eval

import "simd/archsimd"

// mulAddRow is acc[j] += round(a·b[j]) (a multiply, then an add), 8 lanes
// at a time.
func mulAddRow(acc []float32, a float32, b []float32) {
	b = b[:len(acc)]
	av := archsimd.BroadcastFloat32x8(a)
	j := 0
	for ; j+8 <= len(acc); j += 8 {
		s := archsimd.LoadFloat32x8((*[8]float32)(acc[j:]))
		s.Add(av.Mul(archsimd.LoadFloat32x8((*[8]float32)(b[j:])))).Store((*[8]float32)(acc[j:]))
	}
	for ; j < len(acc); j++ {
		acc[j] += float32(a * b[j])
	}
}

// addRow is c[j] = v[j] + c[j], 8 lanes at a time.
func addRow(c, v []float32) {
	v = v[:len(c)]
	j := 0
	for ; j+8 <= len(c); j += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(v[j:]))
		x.Add(archsimd.LoadFloat32x8((*[8]float32)(c[j:]))).Store((*[8]float32)(c[j:]))
	}
	for ; j < len(c); j++ {
		c[j] = v[j] + c[j]
	}
}

// tailRow is one output row's tail lanes (convYnnTail), 8 columns at a
// time.
func tailRow(t, tk int, a, b []float32, nc int, c []float32, first bool) {
	zero := archsimd.BroadcastFloat32x8(0)
	j := 0
	for ; j+8 <= len(c); j += 8 {
		var l [4]archsimd.Float32x8
		for r := range l {
			l[r] = zero
		}
		for r, x := range a[:t] {
			l[r] = archsimd.BroadcastFloat32x8(x).Mul(archsimd.LoadFloat32x8((*[8]float32)(b[r*nc+j:]))).Add(zero)
		}
		s := l[0].Add(l[1])
		if tk == 4 {
			s = l[0].Add(l[1]).Add(l[2].Add(l[3]))
		}
		if !first {
			s = s.Add(archsimd.LoadFloat32x8((*[8]float32)(c[j:])))
		}
		s.Store((*[8]float32)(c[j:]))
	}
	tailRowScalar(t, tk, a, b, nc, c, j, first)
}
