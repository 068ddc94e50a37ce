//go:build !goexperiment.simd || !amd64

package eval

const ynnVector = false

func ynnBlocks256(xs []float32, nblk int, acc *[ynnLanes]float32) { ynnBlocks256Go(xs, nblk, acc) }

func ynnColGroups(xs []float32, inner, ngroups int, acc0, acc1 []float32) {
	ynnColGroupsGo(xs, inner, ngroups, acc0, acc1)
}

func ynnColGroups64(xs []float64, inner, ngroups int, acc0, acc1 []float64) {
	ynnColGroupsGo(xs, inner, ngroups, acc0, acc1)
}

func ynnBlocks128x64(xs []float64, nblk int, acc *[8]float64) { ynnBlocks128x64Go(xs, nblk, acc) }
