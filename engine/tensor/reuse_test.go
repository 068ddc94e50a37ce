package tensor

import (
	"runtime"
	"testing"
	"unsafe"

	"goldtrace/engine/dtype"
)

// Released storage serves the next allocation of its size, zeroed; storage
// the collector has freed meanwhile is not handed out (the pool is weak).
func TestReleaseReusesUntilCollected(t *testing.T) {
	dims := []int64{1 << 17} // 512 KiB of f32
	a := New(dtype.F32, dims)
	for i := range a.Data {
		a.Data[i] = byte(i)
	}
	p := unsafe.Pointer(&a.Data[0])
	Release(a.Data)
	b := New(dtype.F32, dims)
	if unsafe.Pointer(&b.Data[0]) != p {
		t.Fatalf("the released storage was not reused")
	}
	for i, v := range b.Data {
		if v != 0 {
			t.Fatalf("reused storage not zeroed at byte %d", i)
		}
	}
	if New(dtype.F32, dims).Data[0] != 0 || unsafe.Pointer(&New(dtype.F32, dims).Data[0]) == p {
		t.Fatalf("storage handed out twice")
	}
	Release(b.Data)
	b = nil
	runtime.GC()
	runtime.GC()
	if r := reused(4 << 17); r != nil {
		t.Fatalf("storage freed by the collector was handed out again")
	}
	small := New(dtype.F32, []int64{16})
	Release(small.Data)
	if reused(64) != nil {
		t.Fatalf("small storage pooled")
	}
}

// StorageForWriting hands released storage back as it was (its caller
// overwrites it), and fresh storage otherwise.
func TestStorageForWriting(t *testing.T) {
	const n = 1 << 19
	a := Storage(n)
	a[5] = 7
	Release(a)
	b := StorageForWriting(n)
	if &b[0] != &a[0] || b[5] != 7 {
		t.Fatalf("released storage not handed back as it was")
	}
	if c := StorageForWriting(n); &c[0] == &b[0] || len(c) != n || uintptr(unsafe.Pointer(&c[0]))%16 != 0 {
		t.Fatalf("storage handed out twice, or misaligned")
	}
}
