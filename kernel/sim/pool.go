package sim

import (
	"math"
	"sync"
	"unsafe"

	"goldtrace/engine/dtype"
)

// Storage buffers are recycled across runs: a kernel run again (a benchmark,
// a golden calling the same custom-call) gets its tiles from the previous
// run's buffers instead of allocating, zeroing and collecting megabytes.
// Every buffer taken is fully overwritten (sentinel fill or decode) before
// use, and goes back only when its run has finished.

var (
	poolF32 sync.Map // length -> *sync.Pool of *[]float32
	poolF64 sync.Map // length -> *sync.Pool of *[]float64
)

func poolFor(m *sync.Map, n int) *sync.Pool {
	if p, ok := m.Load(n); ok {
		return p.(*sync.Pool)
	}
	p, _ := m.LoadOrStore(n, &sync.Pool{})
	return p.(*sync.Pool)
}

// minPooled: smaller buffers are cheap to allocate.
const minPooled = 1 << 12

// owned are the pooled buffers of one run.
type owned struct {
	mu  sync.Mutex
	f32 []*[]float32
	f64 []*[]float64
}

// f32 returns a buffer of n float32 (contents undefined).
func (o *owned) f32Buf(n int) []float32 {
	if n < minPooled {
		return make([]float32, n)
	}
	var b *[]float32
	if x := poolFor(&poolF32, n).Get(); x != nil {
		b = x.(*[]float32)
	} else {
		s := make([]float32, n)
		b = &s
	}
	o.mu.Lock()
	o.f32 = append(o.f32, b)
	o.mu.Unlock()
	return *b
}

// f64Buf returns a buffer of n float64 (contents undefined).
func (o *owned) f64Buf(n int) []float64 {
	if n < minPooled {
		return make([]float64, n)
	}
	var b *[]float64
	if x := poolFor(&poolF64, n).Get(); x != nil {
		b = x.(*[]float64)
	} else {
		s := make([]float64, n)
		b = &s
	}
	o.mu.Lock()
	o.f64 = append(o.f64, b)
	o.mu.Unlock()
	return *b
}

// release gives the run's buffers back (nothing may use them afterwards).
func (o *owned) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range o.f32 {
		poolFor(&poolF32, len(*b)).Put(b)
	}
	for _, b := range o.f64 {
		poolFor(&poolF64, len(*b)).Put(b)
	}
	o.f32, o.f64 = nil, nil
}

// scratchPool recycles the scratch buffers of instances and loop workers.
var scratchPool sync.Pool

func getScratch() scratch {
	if x := scratchPool.Get(); x != nil {
		return *x.(*scratch)
	}
	return scratch{}
}

func putScratch(s scratch) { scratchPool.Put(&s) }

// chunked runs f over [0,n) in contiguous chunks on up to par goroutines
// (elementwise work: the result does not depend on the split).
func chunked(par, n int, f func(lo, hi int)) {
	const minChunk = 1 << 16
	w := min(par, n/minChunk)
	if w <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + w - 1) / w
	for lo := step; lo < n; lo += step {
		wg.Add(1)
		go func() { defer wg.Done(); f(lo, min(lo+step, n)) }()
	}
	f(0, min(step, n))
	wg.Wait()
}

// decodeF32Par / encodeF32Par are dtype.DecodeF32 / EncodeF32 split over
// goroutines.
// bf16 takes tight loops over the 16-bit view (same results as dtype's).
func decodeF32Par(par int, t dtype.Type, src []byte, dst []float32) {
	sz := t.Size()
	if t == dtype.BF16 {
		u := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), len(dst))
		chunked(par, len(dst), func(lo, hi int) {
			d := dst[lo:hi]
			for i, x := range u[lo:hi] {
				d[i] = math.Float32frombits(uint32(x) << 16)
			}
		})
		return
	}
	chunked(par, len(dst), func(lo, hi int) { dtype.DecodeF32(t, src[lo*sz:hi*sz], dst[lo:hi]) })
}

func encodeF32Par(par int, t dtype.Type, src []float32, dst []byte) {
	sz := t.Size()
	if t == dtype.BF16 {
		u := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), len(src))
		chunked(par, len(src), func(lo, hi int) {
			d := u[lo:hi]
			for i, x := range src[lo:hi] {
				b := math.Float32bits(x)
				if b&0x7fffffff > 0x7f800000 {
					d[i] = uint16(b>>16)&0x8000 | 0x7fc0 // quiet NaN, as ml_dtypes
					continue
				}
				d[i] = uint16((b + 0x7fff + (b>>16)&1) >> 16)
			}
		})
		return
	}
	chunked(par, len(src), func(lo, hi int) { dtype.EncodeF32(t, src[lo:hi], dst[lo*sz:hi*sz]) })
}
