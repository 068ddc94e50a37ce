package eval

import (
	"bytes"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// topK's selections (topKSelect, and topKHeap for a large k) give the
// stable sort's first k bit for bit (values and positions), for the largest
// and the smallest, on rows full of ties, NaNs of both signs and payloads,
// signed zeros and infinities.
func TestTopKSelectMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	types := []dtype.Type{dtype.F32, dtype.F64, dtype.BF16, dtype.F16, dtype.S32, dtype.U8, dtype.S8, dtype.U32, dtype.S64}
	for trial := 0; trial < 200; trial++ {
		typ := types[trial%len(types)]
		size := typ.Size()
		rows, n := int64(1+rng.Intn(5)), int64(1+rng.Intn(300))
		if trial%25 == 0 {
			rows = 700 // enough work to run rows in parallel
		}
		k := int64(rng.Intn(int(min(n, topKSelectMax)) + 1))
		if trial%3 == 0 {
			k = int64(rng.Intn(int(n) + 1)) // k > topKSelectMax takes topKHeap
		}
		x := tensor.New(typ, []int64{rows, n})
		pool := make([][]byte, 6)
		for i := range pool {
			pool[i] = make([]byte, size)
			rng.Read(pool[i])
		}
		for e := int64(0); e < rows*n; e++ {
			b := x.Data[e*int64(size) : (e+1)*int64(size)]
			if rng.Intn(10) < 7 {
				copy(b, pool[rng.Intn(len(pool))])
			} else {
				rng.Read(b)
			}
		}
		for _, largest := range []bool{true, false} {
			topKSelectDisabled = true
			want, err := topK(x, k, largest)
			topKSelectDisabled = false
			if err != nil {
				t.Fatal(err)
			}
			got, err := topK(x, k, largest)
			if err != nil {
				t.Fatal(err)
			}
			wl, gl := want.Leaves(), got.Leaves()
			for i := range wl {
				if !bytes.Equal(wl[i].Data, gl[i].Data) || !equalDims(wl[i].Dims, gl[i].Dims) {
					t.Fatalf("%v rows %d n %d k %d largest %v: result %d\n got  %x\n want %x", typ, rows, n, k, largest, i, gl[i].Data, wl[i].Data)
				}
			}
		}
	}
}
