package customcall

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/config"
)

// The typed-FFI handler's Go half, driven with buffers as XLA hands them
// over (dtype number, data pointer, dims). The C half (handshake, attribute
// lookup, error trampoline) runs under jax in tests/test_kernel_jax_ffi.py.

func f32Buf(v []float32, dims ...int64) Buffer {
	var p unsafe.Pointer
	if len(v) > 0 {
		p = unsafe.Pointer(&v[0])
	}
	return Buffer{Dtype: int32(dtype.F32), Data: p, Dims: dims}
}

func TestFFIExecuteAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := randF32(r, 128*64), randF32(r, 128*64)
	out := make([]float32, 128*64)
	cfg := encodeKernel(t, binaryKernel("ffi_add", "add", 128, 64), nil)
	code, err := ExecuteFFI(cfg, []Buffer{f32Buf(a, 128, 64), f32Buf(b, 128, 64)}, []Buffer{f32Buf(out, 128, 64)})
	if err != nil {
		t.Fatalf("code %d: %v", code, err)
	}
	wantF32(t, "out", f32Tensor(t, out, 128, 64), zipF32(a, b, func(x, y float32) float32 { return x + y }))
}

func TestFFIExecuteTupleAndAlias(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := randF32(r, 32*16), randF32(r, 32*16)
	s, m := make([]float32, len(a)), make([]float32, len(a))
	cfg := encodeKernel(t, sumProdKernel(32, 16), func(c *config.Config) { c.ResultIsSequence = true })
	if _, err := ExecuteFFI(cfg, []Buffer{f32Buf(a, 32, 16), f32Buf(b, 32, 16)}, []Buffer{f32Buf(s, 32, 16), f32Buf(m, 32, 16)}); err != nil {
		t.Fatal(err)
	}
	wantF32(t, "sum", f32Tensor(t, s, 32, 16), zipF32(a, b, func(x, y float32) float32 { return x + y }))
	wantF32(t, "prod", f32Tensor(t, m, 32, 16), zipF32(a, b, func(x, y float32) float32 { return x * y }))

	// input_output_aliases={0: 0}: XLA passes operand 0's buffer as the result.
	want := zipF32(a, b, func(x, y float32) float32 { return x * y })
	cfg = encodeKernel(t, scaleInPlaceKernel(32, 16), nil)
	if _, err := ExecuteFFI(cfg, []Buffer{f32Buf(a, 32, 16), f32Buf(b, 32, 16)}, []Buffer{f32Buf(a, 32, 16)}); err != nil {
		t.Fatal(err)
	}
	wantF32(t, "a (aliased)", f32Tensor(t, a, 32, 16), want)
}

func TestFFIExecuteConstantOperands(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := randF32(r, 8*4)
	k, cv := addConstKernel(c, 8, 4)
	cfg := encodeKernel(t, k, func(cc *config.Config) { cc.ConstantValues = []config.ConstantValue{cv} })
	a := randF32(r, 8*4)
	want := zipF32(a, c, func(x, y float32) float32 { return x + y })
	for _, withConst := range []bool{false, true} {
		out := make([]float32, len(a))
		args := []Buffer{f32Buf(a, 8, 4)}
		if withConst {
			args = append(args, f32Buf(c, 8, 4))
		}
		if _, err := ExecuteFFI(cfg, args, []Buffer{f32Buf(out, 8, 4)}); err != nil {
			t.Fatalf("constant operand %v: %v", withConst, err)
		}
		wantF32(t, "out", f32Tensor(t, out, 8, 4), want)
	}
	// An extra operand that is not the constant is refused, not misread.
	other := append([]float32(nil), c...)
	other[3]++
	out := make([]float32, len(a))
	_, err := ExecuteFFI(cfg, []Buffer{f32Buf(a, 8, 4), f32Buf(other, 8, 4)}, []Buffer{f32Buf(out, 8, 4)})
	if err == nil || !strings.Contains(err.Error(), "constant_values[0]") {
		t.Fatalf("mismatching constant operand: %v", err)
	}
	_, err = ExecuteFFI(cfg, []Buffer{f32Buf(a, 8, 4), f32Buf(c[:8], 2, 4)}, []Buffer{f32Buf(out, 8, 4)})
	if err == nil || !strings.Contains(err.Error(), `constant_values[0] ("c", f32[8,4])`) {
		t.Fatalf("constant operand of the wrong shape: %v", err)
	}
}

func TestFFIExecuteErrors(t *testing.T) {
	a := make([]float32, 16*8)
	cfg := encodeKernel(t, binaryKernel("ffi_err", "add", 16, 8), nil)
	i32 := make([]int32, 16*8)
	cases := []struct {
		name       string
		cfg        string
		args, rets []Buffer
		code       int
		want       string
	}{
		{"empty config", "", nil, nil, FFIInvalidArgument, "attribute 'kernel' is empty"},
		{"not base64", "%%%", nil, nil, FFIInvalidArgument, "bad base64"},
		{"operand count", cfg, []Buffer{f32Buf(a, 16, 8)}, []Buffer{f32Buf(a, 16, 8)}, FFIInvalidArgument, `kernel "ffi_err": takes 2 operands`},
		{"operand shape", cfg, []Buffer{f32Buf(a, 16, 8), f32Buf(a, 8, 16)}, []Buffer{f32Buf(a, 16, 8)}, FFIInvalidArgument, `operand 1 (parameter "b") must be f32[16,8], got f32[8,16]`},
		{"operand dtype", cfg, []Buffer{f32Buf(a, 16, 8), {Dtype: int32(dtype.S32), Data: unsafe.Pointer(&i32[0]), Dims: []int64{16, 8}}}, []Buffer{f32Buf(a, 16, 8)}, FFIInvalidArgument, "must be f32[16,8], got s32[16,8]"},
		{"unknown dtype", cfg, []Buffer{f32Buf(a, 16, 8), {Dtype: 99, Dims: []int64{16, 8}}}, []Buffer{f32Buf(a, 16, 8)}, FFIInvalidArgument, "FFI data type 99"},
		{"result count", cfg, []Buffer{f32Buf(a, 16, 8), f32Buf(a, 16, 8)}, nil, FFIInvalidArgument, "has 0 results but the kernel returns 1"},
		{"result shape", cfg, []Buffer{f32Buf(a, 16, 8), f32Buf(a, 16, 8)}, []Buffer{f32Buf(a, 128)}, FFIInvalidArgument, `result 0 is f32[128] but kernel output 0 ("out") is f32[16,8]`},
		{"no data", cfg, []Buffer{f32Buf(a, 16, 8), {Dtype: int32(dtype.F32), Dims: []int64{16, 8}}}, []Buffer{f32Buf(a, 16, 8)}, FFIInvalidArgument, "has no data"},
	}
	for _, c := range cases {
		code, err := ExecuteFFI(c.cfg, c.args, c.rets)
		if err == nil || code != c.code || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), FFITarget+": ") {
			t.Errorf("%s: code %d, error %v; want code %d and %q", c.name, code, err, c.code, c.want)
		}
	}
}

// A kernel called many times decodes once, also when the first calls race.
func TestFFIKernelDecodedOnceParallel(t *testing.T) {
	cfg := encodeKernel(t, binaryKernel("ffi_cached", "subtract", 4, 4), nil)
	a, b := make([]float32, 16), make([]float32, 16)
	for i := range a {
		a[i], b[i] = float32(i), 1
	}
	before := kernelDecodes.Load()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]float32, 16)
			for i := 0; i < 125; i++ {
				if _, err := ExecuteFFI(cfg, []Buffer{f32Buf(a, 4, 4), f32Buf(b, 4, 4)}, []Buffer{f32Buf(out, 4, 4)}); err != nil {
					errs <- err
					return
				}
			}
			for i := range out {
				if out[i] != a[i]-1 {
					errs <- &bindError{"wrong value"}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := kernelDecodes.Load() - before; n != 1 {
		t.Fatalf("1000 calls decoded the config %d times, want 1", n)
	}
}

// BenchmarkFFIExecute is one cached call of a small kernel; BenchmarkFFIDecode
// the decode a cache miss adds (config.Decode and ir.Validate).
func BenchmarkFFIExecute(b *testing.B) {
	cfg := encodeKernel(b, binaryKernel("bench_add", "add", 128, 64), nil)
	x, y, out := make([]float32, 128*64), make([]float32, 128*64), make([]float32, 128*64)
	args, rets := []Buffer{f32Buf(x, 128, 64), f32Buf(y, 128, 64)}, []Buffer{f32Buf(out, 128, 64)}
	for b.Loop() {
		if _, err := ExecuteFFI(cfg, args, rets); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFFIDecode(b *testing.B) {
	cfg := encodeKernel(b, binaryKernel("bench_add", "add", 128, 64), nil)
	for b.Loop() {
		if _, err := decodeKernel(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
