package eval

import (
	"math/rand"
	"testing"
)

// permuteToPar against the definition (result index → source index, one
// element at a time) on random shapes with unit, mergeable and transposed
// dimensions, serial and on several goroutines, past the tile sizes and the
// parallel threshold.
func TestPermuteToMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	shapes := [][]int64{{8, 56, 56, 64}, {3, 1, 17, 40}, {70, 33}, {1, 1, 5}, {2, 3, 4, 5, 6}, {300, 1, 260}, {9, 64, 9, 64}}
	for _, dims := range shapes {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		src := make([]int32, n)
		for i := range src {
			src[i] = int32(i)
		}
		for trial := 0; trial < 6; trial++ {
			perm := rng.Perm(len(dims))
			if trial == 0 {
				for i := range perm {
					perm[i] = i
				}
			}
			pdims := make([]int64, len(dims))
			for i, p := range perm {
				pdims[i] = dims[p]
			}
			strides := make([]int64, len(dims))
			s := int64(1)
			for i := len(dims) - 1; i >= 0; i-- {
				strides[i], s = s, s*dims[i]
			}
			want := make([]int32, n)
			idx := make([]int64, len(dims))
			for o := range want {
				si := int64(0)
				for i, p := range perm {
					si += idx[i] * strides[p]
				}
				want[o] = src[si]
				for d := len(dims) - 1; d >= 0; d-- {
					if idx[d]++; idx[d] < pdims[d] {
						break
					}
					idx[d] = 0
				}
			}
			for _, par := range []int{1, 3} {
				got := permuteToPar(par, src, dims, perm)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("dims %v perm %v par %d: element %d is %d, want %d", dims, perm, par, i, got[i], want[i])
					}
				}
			}
		}
	}
}
