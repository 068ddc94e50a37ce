// Package sim runs kernel IR (goldtrace/kernel/ir/irpb) on tensors: every SPMD
// program instance, loops, masks, access patterns, dynamic indices and the
// engines' arithmetic (float32 compute, ml_dtypes rounding to the destination
// dtype). See kernel_ir.proto for the contract each instruction follows.
//
// Storage. Every tensor without an Allocation keeps one float64 per element,
// holding the value already rounded to the tensor's dtype (float64 represents
// every dtype of at most 32 bits exactly). On-chip tensors with an Allocation
// live in per-instance physical memory (SBUF: 128 partitions × 192 KiB, PSUM:
// 128 partitions × 8 banks × 2 KiB) as raw little-endian bytes of their dtype,
// so overlapping placements alias as on the device.
//
// Two float32 stores avoid conversions on the hot paths: f32 HBM parameters
// are read in place from the caller's tensor (never written: immutable) and
// f32 outputs are written into the tensor Run returns; PSUM float tensors and
// float SBUF tiles that feed matmul keep float32 values, so the GEMM
// (engine/eval.GemmF32) reads its moving operand and accumulates into PSUM in
// place.
//
// Uninitialised memory. `alloc`, the start of every program instance (for
// on-chip and output tensors) and physical memory fill with a sentinel: NaN
// for float dtypes, the dtype's largest value for integers (int8 127, int32
// 2147483647, uint32 4294967295, bool true). Unplaced physical memory starts
// as 0xFF bytes. A kernel that reads memory nobody wrote therefore computes
// NaN / obviously wrong integers.
//
// Arithmetic. ALU operators run in float32 (bitwise ones on the exact
// integers); activation functions are evaluated in float64 on the float32
// input and rounded once to float32 (exp by a table-free polynomial, with an
// AVX-512 form in GOEXPERIMENT=simd builds), so they are correctly rounded
// except within ~1e-16 of a rounding boundary. Results round to the
// destination dtype as ml_dtypes does; integers round half to even and
// saturate, NaN -> 0.
//
// Concurrency. Run is reentrant. Program instances run on up to
// Options.Parallel goroutines; otherwise one affine loop at a time fans its
// iterations out when no iteration can see another's values: every on-chip
// tensor its body writes is either local to an iteration (touched only in
// the body, first overwritten whole each iteration: an alloc, a memset, a
// full-tile load; each worker gets its own storage) or partitioned (every
// access in the body indexes its own slice by the loop variable, as
// rhs_tiles[k] = load or result_tiles[bm] += res; the storage is shared),
// and HBM writes depend on the loop variable. A matmul with nothing running
// beside it splits its GEMM over the goroutines instead. Every schedule
// computes each element the same way, so results do not depend on Parallel.
// Kernels with atomics, device_print or RNG run their
// instances in order; kernels with all_reduce run one goroutine per instance.
// Random numbers: SplitMix64 per program instance, reseeded by random_seed.
//
// Limits: at most MaxInstructionExecutions executed instructions and
// MaxTileElements elements per tile; beyond, Run refuses the kernel.
package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir/irpb"
)

// Options controls a run.
type Options struct {
	// Stdout receives device_print output (nil: discarded).
	Stdout io.Writer
	// Parallel bounds the goroutines that run program instances and
	// independent affine-loop iterations concurrently. 1 runs everything
	// serially in program order; <= 0 uses GOMAXPROCS. Kernels with atomics,
	// prints or RNG run their instances serially (deterministic order);
	// kernels with collectives run one goroutine per instance (they must meet).
	Parallel int
	// Devices connects the kernel's device collectives (cc_*) to the other
	// devices of a multi-device run (devcoll.go); nil: one device.
	Devices DeviceComm
}

// Error is a simulator failure. Rule classifies it:
//
//	"input"       the caller's tensors do not match the kernel's parameters
//	"invalid"     the kernel IR breaks the contract (unknown op, bad attr, shapes)
//	"bounds"      an access leaves its tensor (the kernel's bug, found at run time)
//	"runtime"     any other failure while evaluating (e.g. collective mismatch)
type Error struct {
	Rule string
	Op   string // instruction op ("" when not about one instruction)
	File string // kernel source file from Loc ("" if unknown)
	Line int
	Msg  string
}

func (e *Error) Error() string {
	s := "kernel sim"
	if e.File != "" || e.Line != 0 {
		s += fmt.Sprintf(" %s:%d", e.File, e.Line)
	}
	if e.Op != "" {
		s += ": " + e.Op
	}
	return s + ": " + e.Msg + " [" + e.Rule + "]"
}

// IsInvalidKernel reports whether err says the kernel (or its inputs) is
// malformed rather than that evaluation failed.
func IsInvalidKernel(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Rule == "invalid" || e.Rule == "input")
}

const (
	numPartitions = 128
	sbufPartBytes = 192 * 1024
	psumPartBytes = 8 * 2048
)

// Run executes kernel k on inputs (one per k.Inputs) and returns one tensor
// per k.Outputs. The inputs are never modified.
func Run(k *irpb.Kernel, inputs []*tensor.Tensor, opts Options) (outs []*tensor.Tensor, err error) {
	defer recoverInto(&err)
	p, err := compile(k)
	if err != nil {
		return nil, err
	}
	return p.run(inputs, opts)
}

// recoverInto turns a panic (a simulator bug on some malformed kernel) into
// an error, so callers across the C ABI never crash.
func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = &Error{Rule: "runtime", Msg: fmt.Sprintf("internal simulator error: %v", r)}
	}
}

// sentinel is the value uninitialised memory of type t reads as.
func sentinel(t dtype.Type) float64 {
	switch {
	case t.IsFloat():
		return math.NaN()
	case t == dtype.Pred:
		return 1
	case t.IsSigned():
		return float64(int64(1)<<(t.Bits()-1) - 1)
	case t.IsUnsigned():
		return float64(uint64(1)<<t.Bits() - 1)
	}
	return math.NaN()
}

// storage is a tensor's memory: vals (private) or a window of a physical
// memory (mem, byte addressed).
type storage struct {
	dt   dtype.Type
	vals []float64
	f32  []float32 // f32 HBM tensors: the tensor's own bytes (element offsets)
	mem  []byte
	out  *tensor.Tensor // the tensor f32 points into, returned as is
	// phys: the physical memory's partition stride and the tensor's base
	// (partition_offset*partStride + byte_offset) before per-iteration offsets.
	partStride int
}

func newPrivate(t dtype.Type, n int64) *storage {
	v := make([]float64, n)
	s := sentinel(t)
	for i := range v {
		v[i] = s
	}
	return &storage{dt: t, vals: v}
}

// instance is the state of one program instance (or one parallel worker of
// it: workers share everything but the tensors local to the loop body).
type instance struct {
	r      *runState
	stores []*storage
	vars   []int64
	pid    []int64
	sbuf   []byte
	psum   []byte
	rng    *rngState
	buf    scratch
	lin    int  // linear program id
	nested bool // inside a parallel loop worker or parallel instance
	// regs: engine accumulator registers by bank (regs.go), made on first use.
	regs map[string][]float64
}

type runState struct {
	p      *program
	opts   Options
	par    int
	out    io.Writer
	outMu  sync.Mutex
	atomMu sync.Mutex
	coll   *collectives

	bufs owned // pooled storage of this run

	fanMu             sync.Mutex
	fanning           bool
	instancesParallel bool
}

func (p *program) run(inputs []*tensor.Tensor, opts Options) ([]*tensor.Tensor, error) {
	k := p.k
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	rs := &runState{p: p, opts: opts, par: par, out: opts.Stdout}
	defer rs.bufs.release()
	if len(inputs) != len(k.Inputs) {
		return nil, &Error{Rule: "input", Msg: fmt.Sprintf("kernel %s takes %d inputs, got %d", k.Name, len(k.Inputs), len(inputs))}
	}
	shared := make([]*storage, len(k.Tensors))
	for i, id := range k.Inputs {
		t := k.Tensors[id]
		in := inputs[i]
		dt := dtype.Type(t.Dtype)
		if in == nil {
			return nil, &Error{Rule: "input", Msg: fmt.Sprintf("parameter %d (%s) is nil", i, t.Name)}
		}
		if in.Type != dt || !sameDims(in.Dims, t.Shape) {
			return nil, &Error{Rule: "input", Msg: fmt.Sprintf("parameter %d (%s) must be %v, got %v", i, t.Name, tensor.ShapeString(dt, t.Shape), in)}
		}
		if shared[id] != nil {
			return nil, &Error{Rule: "input", Msg: fmt.Sprintf("tensor %s is listed twice in inputs", t.Name)}
		}
		var st *storage
		switch {
		case dt == dtype.F32 && !t.Mutable && len(in.Data) > 0:
			// read in place: an immutable parameter is never written
			st = &storage{dt: dt, f32: f32View(in.Data)}
		case dt == dtype.F32 && len(in.Data) > 0:
			c := in.Clone()
			st = &storage{dt: dt, f32: f32View(c.Data), out: c}
		case dt.IsFloat():
			// narrower floats are exact in float32
			st = &storage{dt: dt, f32: rs.bufs.f32Buf(int(in.NumElements()))}
			decodeF32Par(par, dt, in.Data, st.f32)
		default:
			st = &storage{dt: dt, vals: make([]float64, in.NumElements())}
			decodeVals(dt, in.Data, st.vals)
		}
		shared[id] = st
	}
	for id, t := range k.Tensors {
		if shared[id] != nil {
			continue
		}
		switch {
		case t.Role == irpb.TensorRole_CONSTANT:
			st := &storage{dt: dtype.Type(t.Dtype), vals: make([]float64, tensor.NumElements(t.Shape))}
			dtype.DecodeF64(st.dt, t.Data, st.vals)
			shared[id] = st
		case t.Memory == irpb.Memory_SHARED_HBM && dtype.Type(t.Dtype) == dtype.F32 && tensor.NumElements(t.Shape) > 0:
			// f32 outputs live in the returned tensor's bytes
			o := tensor.New(dtype.F32, t.Shape)
			f := f32View(o.Data)
			fillF32(f, float32(math.NaN()))
			shared[id] = &storage{dt: dtype.F32, f32: f, out: o}
		case t.Memory == irpb.Memory_SHARED_HBM && dtype.Type(t.Dtype).IsFloat():
			f := rs.bufs.f32Buf(int(tensor.NumElements(t.Shape)))
			fillF32(f, float32(math.NaN()))
			shared[id] = &storage{dt: dtype.Type(t.Dtype), f32: f}
		case t.Memory == irpb.Memory_SHARED_HBM:
			shared[id] = newPrivate(dtype.Type(t.Dtype), tensor.NumElements(t.Shape))
		}
	}
	n := p.numInstances
	if p.hasCollectives {
		rs.coll = newCollectives(int(n))
	}
	runOne := func(lin int64) error {
		in := rs.newInstance(shared, lin)
		in.buf = getScratch()
		defer func() { putScratch(in.buf) }()
		return in.execBlock(p.body)
	}
	var err error
	switch {
	case p.hasCollectives && n > 1:
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := int64(0); i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = safeCall(func() error { return runOne(i) })
				if errs[i] != nil {
					rs.coll.abort(errs[i])
				}
			}()
		}
		wg.Wait()
		err = firstErr(errs)
	case par <= 1 || n == 1 || p.serialInstances:
		for i := int64(0); i < n && err == nil; i++ {
			err = runOne(i)
		}
	default:
		rs.instancesParallel = true
		err = parallelFor(par, int(n), func(i int) error { return runOne(int64(i)) })
	}
	if err != nil {
		return nil, err
	}
	outs := make([]*tensor.Tensor, len(k.Outputs))
	seen := map[*storage]bool{}
	for i, id := range k.Outputs {
		t := k.Tensors[id]
		st := shared[id]
		if st == nil {
			return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("output %d (%s) is not in shared HBM", i, t.Name)}
		}
		if st.out != nil {
			if seen[st] {
				outs[i] = st.out.Clone()
			} else {
				outs[i] = st.out
			}
			seen[st] = true
			continue
		}
		o := tensor.New(st.dt, t.Shape)
		if st.f32 != nil && st.dt == dtype.F32 {
			copy(o.Data, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(st.f32))), 4*len(st.f32)))
		} else if st.f32 != nil {
			encodeF32Par(par, st.dt, st.f32, o.Data)
		} else {
			encodeVals(st.dt, st.vals, o.Data)
		}
		outs[i] = o
	}
	return outs, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			var ce *collAbort
			if errors.As(e, &ce) {
				continue
			}
			return e
		}
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// parallelFor runs f(0..n-1) on up to par goroutines; the first error wins.
func parallelFor(par, n int, f func(i int) error) error {
	var mu sync.Mutex
	next := 0
	var first error
	work := func() {
		for {
			mu.Lock()
			if next >= n || first != nil {
				mu.Unlock()
				return
			}
			i := next
			next++
			mu.Unlock()
			if err := safeCall(func() error { return f(i) }); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
		}
	}
	var wg sync.WaitGroup
	for g := 1; g < min(par, n); g++ {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
	return first
}

func sameDims(a []int64, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (rs *runState) newInstance(shared []*storage, lin int64) *instance {
	p := rs.p
	k := p.k
	in := &instance{r: rs, lin: int(lin), stores: make([]*storage, len(k.Tensors)), vars: make([]int64, max(k.NumVars, 0)+1)}
	// program ids: row-major over the grid, last dimension fastest.
	in.pid = make([]int64, len(k.Grid))
	rem := lin
	for d := len(k.Grid) - 1; d >= 0; d-- {
		in.pid[d] = rem % k.Grid[d]
		rem /= k.Grid[d]
	}
	if p.hasPhysSBUF {
		in.sbuf = make([]byte, numPartitions*sbufPartBytes)
		fillSentinelBytes(in.sbuf)
	}
	if p.hasPhysPSUM {
		in.psum = make([]byte, numPartitions*psumPartBytes)
		fillSentinelBytes(in.psum)
	}
	in.rng = newRNG(uint64(lin))
	for id, t := range k.Tensors {
		if shared[id] != nil {
			in.stores[id] = shared[id]
			continue
		}
		if p.used[id] {
			in.stores[id] = in.freshStorage(int32(id))
		}
		_ = t
	}
	return in
}

// fillSentinelBytes fills physical memory with 0xFF bytes: NaN for every
// float dtype the device has (f32, bf16, f16, fp8 e4m3/e5m2), -1 for signed
// integers and the maximum for unsigned ones. `alloc` of a placed tensor
// writes its own dtype's sentinel.
func fillSentinelBytes(b []byte) {
	for i := range b {
		b[i] = 0xFF
	}
}

// freshStorage makes the storage of a per-instance tensor: physical window or
// private values filled with the sentinel.
func (in *instance) freshStorage(id int32) *storage {
	t := in.r.p.k.Tensors[id]
	dt := dtype.Type(t.Dtype)
	if t.Allocation != nil && (t.Memory == irpb.Memory_SBUF || t.Memory == irpb.Memory_PSUM) {
		st := &storage{dt: dt}
		if t.Memory == irpb.Memory_SBUF {
			st.mem, st.partStride = in.sbuf, sbufPartBytes
		} else {
			st.mem, st.partStride = in.psum, psumPartBytes
		}
		return st
	}
	if (t.Memory == irpb.Memory_PSUM && dt.IsFloat()) || in.r.p.f32Store[id] {
		// PSUM accumulators keep float32 storage: matmul accumulates in place
		f := in.r.bufs.f32Buf(int(tensor.NumElements(t.Shape)))
		fillF32(f, float32(math.NaN()))
		return &storage{dt: dt, f32: f}
	}
	v := in.r.bufs.f64Buf(int(tensor.NumElements(t.Shape)))
	fillF64(v, sentinel(dt))
	return &storage{dt: dt, vals: v}
}

// scratch holds reusable buffers of one instance / worker.
type scratch struct {
	f [6][]float64
	g [3][]float32
}

func (s *scratch) get(i, n int) []float64 {
	if cap(s.f[i]) < n {
		s.f[i] = make([]float64, n)
	}
	return s.f[i][:n]
}

// decodeVals / encodeVals convert between tensor bytes and values, with
// direct loops for f32 and bf16 (exact: values are already of the dtype).
func decodeVals(t dtype.Type, src []byte, dst []float64) {
	switch t {
	case dtype.F32:
		f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(src))), len(dst))
		for i, x := range f {
			dst[i] = float64(x)
		}
	case dtype.BF16:
		u := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), len(dst))
		for i, x := range u {
			dst[i] = float64(math.Float32frombits(uint32(x) << 16))
		}
	default:
		dtype.DecodeF64(t, src, dst)
	}
}

func encodeVals(t dtype.Type, src []float64, dst []byte) {
	switch t {
	case dtype.F32:
		f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(dst))), len(src))
		for i, x := range src {
			f[i] = float32(x)
		}
	case dtype.BF16:
		u := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), len(src))
		for i, x := range src {
			// values are bf16 already (or NaN): the top half of the f32 bits,
			// except NaN payloads, which ml_dtypes keeps quiet.
			b := math.Float32bits(float32(x))
			if x != x {
				u[i] = uint16(dtype.FromF32(dtype.BF16, float32(x)))
				continue
			}
			u[i] = uint16(b >> 16)
		}
	default:
		dtype.EncodeF64(t, src, dst)
	}
}

func f32View(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func safeCall(f func() error) (err error) {
	defer recoverInto(&err)
	return f()
}
