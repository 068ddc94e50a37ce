package customcall

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/config"
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
	"goldtrace/kernel/sim"
)

// What a kernel custom-call needs, shared by the typed-FFI CPU handler
// (ffi.go) and the golden evaluator's handlers (eval.go):
// a cache of decoded backend_configs, the binding of operands to the kernel's
// parameters (constant_values included) and the simulator run.

// kernelCall is one decoded backend_config, ready to run.
type kernelCall struct {
	cfg *config.Config
	k   *irpb.Kernel
	// deviceCollectives: the IR has cc_* instructions (nki.collectives),
	// which meet the other emulated devices of a golden.
	deviceCollectives bool
}

// name is the kernel's name for messages.
func (kc *kernelCall) name() string {
	if kc.cfg.FuncName != "" {
		return kc.cfg.FuncName
	}
	return kc.k.GetName()
}

// configError is a backend_config goldtrace cannot read: not base64 JSON of
// the schema, a newer kernel_version, another producer's keys, an IR that
// does not decode or breaks the IR's rules.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// bindError is an operand or result that does not fit the kernel.
type bindError struct{ msg string }

func (e *bindError) Error() string { return e.msg }

func bindErrorf(format string, args ...any) error {
	return &bindError{fmt.Sprintf(format, args...)}
}

// ---- the decode cache ----

// A kernel called many times (a jitted step, a loop in a golden) is decoded
// once: entries are keyed by the config string's hash and hold the string to
// rule out collisions. Concurrent first calls of one config decode it once
// (the entry's sync.Once); failures are cached too.
type kernelCacheEntry struct {
	src  string
	once sync.Once
	kc   *kernelCall
	err  error
}

// kernelCacheLimit bounds the cache; past it the cache starts over (entries
// in use stay valid: callers hold them).
const kernelCacheLimit = 256

var (
	kernelCacheMu   sync.Mutex
	kernelCache     = map[uint64][]*kernelCacheEntry{}
	kernelCacheSize int
	kernelSeed      = maphash.MakeSeed()
	// kernelDecodes counts config decodes (cache misses), for tests.
	kernelDecodes atomic.Int64
)

// lookupKernel returns the decoded kernel of backend_config s. s may point
// into foreign memory (an XLA attribute): it is copied only when inserted.
func lookupKernel(s string) (*kernelCall, error) {
	h := maphash.String(kernelSeed, s)
	kernelCacheMu.Lock()
	var e *kernelCacheEntry
	for _, c := range kernelCache[h] {
		if c.src == s {
			e = c
			break
		}
	}
	if e == nil {
		if kernelCacheSize >= kernelCacheLimit {
			kernelCache = map[uint64][]*kernelCacheEntry{}
			kernelCacheSize = 0
		}
		e = &kernelCacheEntry{src: strings.Clone(s)}
		kernelCache[h] = append(kernelCache[h], e)
		kernelCacheSize++
	}
	kernelCacheMu.Unlock()
	e.once.Do(func() {
		kernelDecodes.Add(1)
		e.kc, e.err = decodeKernel(e.src)
	})
	return e.kc, e.err
}

func decodeKernel(s string) (*kernelCall, error) {
	c, k, err := config.Decode(s)
	if err != nil {
		return nil, &configError{err}
	}
	if err := ir.Validate(k); err != nil {
		return nil, &configError{fmt.Errorf("kernel %q: the IR in serialize_ir_string breaks the IR's rules: %v", c.FuncName, err)}
	}
	for i, id := range k.Outputs {
		if id < 0 || int(id) >= len(k.Tensors) {
			return nil, &configError{fmt.Errorf("kernel %q: output %d names tensor %d, which does not exist", c.FuncName, i, id)}
		}
	}
	return &kernelCall{cfg: c, k: k, deviceCollectives: hasDeviceCollectives(k.Body)}, nil
}

// ---- operands and results ----

// paramType is parameter i's dtype and shape.
func (kc *kernelCall) paramType(i int) (dtype.Type, []int64) {
	t := kc.k.Tensors[kc.k.Inputs[i]]
	return dtype.Type(t.Dtype), t.Shape
}

// outputType is output i's dtype and shape.
func (kc *kernelCall) outputType(i int) (dtype.Type, []int64) {
	t := kc.k.Tensors[kc.k.Outputs[i]]
	return dtype.Type(t.Dtype), t.Shape
}

// bindInputs maps a custom-call's operands to the kernel's parameters. The
// operands are the parameters in order, optionally followed by one operand
// per constant_values entry (how producers pass compile-time constants);
// those must equal the constants the config carries (the IR has them
// inline), and anything else is an error naming the operand.
func (kc *kernelCall) bindInputs(args []*tensor.Tensor) ([]*tensor.Tensor, error) {
	np, nc := len(kc.k.Inputs), len(kc.cfg.ConstantValues)
	switch {
	case len(args) == np:
	case nc > 0 && len(args) == np+nc:
		for j, cv := range kc.cfg.ConstantValues {
			a := args[np+j]
			dt, _ := dtype.FromNumpy(cv.Dtype)
			if a.Type != dt || !equalDims(a.Dims, cv.Shape) {
				return nil, bindErrorf("operand %d is constant_values[%d] (%q, %s) but is %v", np+j, j, cv.Name, tensor.ShapeString(dt, cv.Shape), a)
			}
			if !bytes.Equal(a.Data, cv.Data) {
				return nil, bindErrorf("operand %d holds other data than constant_values[%d] (%q) of the config", np+j, j, cv.Name)
			}
		}
	default:
		want := fmt.Sprintf("%d operands (its parameters)", np)
		if nc > 0 {
			want = fmt.Sprintf("%d operands (its parameters) or %d (parameters then its %d constant_values)", np, np+nc, nc)
		}
		return nil, bindErrorf("takes %s, got %d", want, len(args))
	}
	for i := 0; i < np; i++ {
		dt, dims := kc.paramType(i)
		if args[i].Type != dt || !equalDims(args[i].Dims, dims) {
			return nil, bindErrorf("operand %d (parameter %q) must be %s, got %v", i, kc.k.Tensors[kc.k.Inputs[i]].Name, tensor.ShapeString(dt, dims), args[i])
		}
	}
	return args[:np], nil
}

// checkResult checks that the custom-call's result i has output i's type.
func (kc *kernelCall) checkResult(i int, dt dtype.Type, dims []int64) error {
	kt, kd := kc.outputType(i)
	if dt != kt || !equalDims(dims, kd) {
		return bindErrorf("result %d is %s but kernel output %d (%q) is %s", i, tensor.ShapeString(dt, dims), i, kc.k.Tensors[kc.k.Outputs[i]].Name, tensor.ShapeString(kt, kd))
	}
	return nil
}

func equalDims(a, b []int64) bool {
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

// ---- running ----

// run simulates the kernel on bound inputs (kernel/sim, in process). An IR
// the simulator refuses as invalid (an op or attribute it does not know) is
// a kernel goldtrace cannot read: a *configError.
func (kc *kernelCall) run(inputs []*tensor.Tensor, opts sim.Options) ([]*tensor.Tensor, error) {
	outs, err := sim.Run(kc.k, inputs, opts)
	if err != nil {
		var se *sim.Error
		if errors.As(err, &se) && se.Rule == "invalid" {
			return nil, &configError{err}
		}
		return nil, err
	}
	if len(outs) != len(kc.k.Outputs) {
		return nil, fmt.Errorf("the simulator returned %d outputs for a kernel with %d", len(outs), len(kc.k.Outputs))
	}
	return outs, nil
}

func hasDeviceCollectives(body []*irpb.Stmt) bool {
	for _, s := range body {
		if in := s.GetInst(); in != nil && ir.IsDeviceCollective(in.Op) {
			return true
		}
		if l := s.GetLoop(); l != nil && hasDeviceCollectives(l.Body) {
			return true
		}
	}
	return false
}
