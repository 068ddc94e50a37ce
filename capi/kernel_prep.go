package main

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"goldtrace/kernel/config"
	"goldtrace/kernel/ir/irpb"
)

// The Go half of a dump_config miss, gt_kb_finish then
// gt_kernel_config_encode, in plain Go (capi's tests call these).

// finishKernel completes kb's kernel with its signature (JSON) and validates
// it. The IR is serialized (and the config's other kernel-only parts made)
// while the rules are checked, so that gt_kernel_config_encode, the next
// call of a dump_config miss, finds them made.
func finishKernel(kb *kernelBuilder, sigJSON []byte) (*irpb.Kernel, error) {
	if err := kb.wait(); err != nil {
		return nil, err
	}
	sig, err := parseSignature(sigJSON)
	if err != nil {
		return nil, withStatus(statusInvalidArgument, "kernel signature: %v", err)
	}
	k, err := kb.b.Finish(sig)
	if err != nil {
		return nil, withStatus(statusInvalidArgument, "%v", err)
	}
	prep := &kernelPrep{done: make(chan struct{})}
	err = kb.b.ValidateMarshal(k, func(b []byte, err error) {
		defer close(prep.done)
		defer func() {
			if r := recover(); r != nil {
				prep.err = fmt.Errorf("internal error preparing the backend_config: %v", r)
			}
		}()
		if prep.err = err; err == nil {
			prep.irBytes = b
			prep.config = config.Precompute(k, b, guessExtras())
		}
	})
	if err != nil {
		return nil, withStatus(statusInvalidArgument, "%v", err) // as validateKernel
	}
	kernelPreps.Store(k, prep)
	return k, nil
}

// kernelPrep is what finishKernel prepares for a kernel handle's later
// calls: the IR's bytes and the backend_config's kernel-only parts. Ready
// once done is closed; err (a Go panic made into an error) sends those calls
// back to the plain path.
type kernelPrep struct {
	done    chan struct{}
	irBytes []byte
	config  *config.Precomputed
	err     error
}

// kernelPreps maps a finished kernel (*irpb.Kernel, the value of its handle)
// to its *kernelPrep; gt_handle_free drops the entry with the handle.
var kernelPreps sync.Map

// preparedKernel waits for what finishKernel prepared for k; nil when
// nothing was (a kernel loaded or decoded) or preparing failed.
func preparedKernel(k *irpb.Kernel) *kernelPrep {
	v, ok := kernelPreps.Load(k)
	if !ok {
		return nil
	}
	p := v.(*kernelPrep)
	<-p.done
	if p.err != nil {
		return nil
	}
	return p
}

// forgetKernel drops what was prepared for a handle's value v (gt_handle_free).
func forgetKernel(v any) {
	if k, ok := v.(*irpb.Kernel); ok {
		kernelPreps.Delete(k)
	}
}

// configExtras are the backend_config keys the kernel IR does not determine;
// the Python side (FrameworkKernel) supplies them.
type configExtras struct {
	FuncName                 string                 `json:"func_name"`
	PlatformTarget           string                 `json:"platform_target"`
	PlatformTargetIsFallback bool                   `json:"platform_target_is_fallback"`
	Opts                     map[string]string      `json:"opts"`
	HasCollectives           *bool                  `json:"has_collectives"`
	ConstantValues           []config.ConstantValue `json:"constant_values"`
	KernelReturn             bool                   `json:"kernel_return"`
	ResultIsSequence         bool                   `json:"result_is_sequence"`
}

// apply sets the extras in c.
func (ex *configExtras) apply(c *config.Config) {
	if ex.FuncName != "" {
		c.FuncName = ex.FuncName
	}
	c.PlatformTarget = ex.PlatformTarget
	c.PlatformTargetIsFallback = ex.PlatformTargetIsFallback
	for key, v := range ex.Opts {
		c.Opts[key] = v
	}
	if ex.HasCollectives != nil {
		c.HasCollectives = c.HasCollectives || *ex.HasCollectives
	}
	c.ConstantValues = ex.ConstantValues
	c.KernelReturn = ex.KernelReturn
	c.ResultIsSequence = ex.ResultIsSequence
}

// lastExtras are the latest extras' keys that come before the IR in the
// config JSON (but func_name, which is the kernel's own): the guess of the
// next kernel's (config.Precompute makes the config's base64 ahead for the
// guessed JSON layout; a wrong guess only leaves that work to the encode).
var lastExtras atomic.Pointer[configExtras]

func guessExtras() func(*config.Config) {
	ex := lastExtras.Load()
	if ex == nil {
		return nil
	}
	return func(c *config.Config) { ex.apply(c) }
}

// encodeKernelConfig builds the base64 backend_config of kernel k with the
// extras (JSON).
func encodeKernelConfig(k *irpb.Kernel, extrasJSON []byte) (string, error) {
	ex, err := parseExtras(extrasJSON)
	if err != nil {
		return "", withStatus(statusInvalidArgument, "backend_config extras: %v", err)
	}
	var c config.Config
	encode := config.Encode
	if p := preparedKernel(k); p != nil {
		c, encode = p.config.Config(), p.config.Encode
	} else {
		c = config.FromKernel(k)
	}
	ex.apply(&c)
	lastExtras.Store(&configExtras{PlatformTarget: ex.PlatformTarget, PlatformTargetIsFallback: ex.PlatformTargetIsFallback,
		Opts: maps.Clone(ex.Opts), HasCollectives: ex.HasCollectives})
	s, err := encode(c)
	if err != nil {
		return "", withStatus(statusInvalidArgument, "backend_config: %v", err)
	}
	return s, nil
}
