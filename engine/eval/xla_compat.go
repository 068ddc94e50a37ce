package eval

import (
	"fmt"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
)

// Where XLA:CPU versions disagree the evaluator follows the newest; an older
// version's behaviour is a rewrite of the module (docs/xla-cpu-semantics.md).

// XLACompatVersions are the versions ApplyXLACompat knows; "" is the newest.
var XLACompatVersions = []string{"", "0.10"}

// ApplyXLACompat rewrites m in place (it must be the caller's private copy)
// so that the evaluator computes what the XLA:CPU of JAX version computed.
//
// "0.10": bf16 maximum and minimum become f32 ops between converts, as that
// XLA's float normalization rewrote them, so subnormal inputs are flushed
// (max(1e-40, 0) is 0). The newest XLA:CPU computes them in bf16 and keeps
// subnormals (1e-40), which is what the evaluator does unrewritten.
func ApplyXLACompat(m *hlo.Module, version string) error {
	switch version {
	case "":
		return nil
	case "0.10":
	default:
		return fmt.Errorf("unknown XLA compatibility version %q (known: 0.10)", version)
	}
	names := map[string]bool{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			names[in.Name] = true
		}
	}
	fresh := func(base string) string {
		for i := 0; ; i++ {
			n := fmt.Sprintf("%s.compat%d", base, i)
			if !names[n] {
				names[n] = true
				return n
			}
		}
	}
	for _, c := range m.Computations {
		repl := map[*hlo.Instruction]*hlo.Instruction{}
		out := make([]*hlo.Instruction, 0, len(c.Instructions))
		for _, in := range c.Instructions {
			for i, op := range in.Operands {
				if r, ok := repl[op]; ok {
					in.Operands[i] = r
				}
			}
			for i, op := range in.ControlPredecessors {
				if r, ok := repl[op]; ok {
					in.ControlPredecessors[i] = r
				}
			}
			if (in.Opcode != "maximum" && in.Opcode != "minimum") || in.Shape.Elem != dtype.BF16 || len(in.Operands) != 2 {
				out = append(out, in)
				continue
			}
			f32 := in.Shape
			f32.Elem = dtype.F32
			if f32.Layout != nil && f32.Layout.ElementSizeBits != 0 {
				l := *f32.Layout
				l.ElementSizeBits = 0
				f32.Layout = &l
			}
			mk := func(name, opcode string, s hlo.Shape, ops ...*hlo.Instruction) *hlo.Instruction {
				ni := &hlo.Instruction{Name: name, Opcode: opcode, Shape: s, Operands: ops, Parent: c, Metadata: in.Metadata}
				out = append(out, ni)
				return ni
			}
			a := mk(fresh(in.Name), "convert", f32, in.Operands[0])
			b := mk(fresh(in.Name), "convert", f32, in.Operands[1])
			v := mk(fresh(in.Name), in.Opcode, f32, a, b)
			// The converted result takes the original's place and name.
			res := *in
			res.Opcode, res.Operands = "convert", []*hlo.Instruction{v}
			out = append(out, &res)
			repl[in] = &res
		}
		c.Instructions = out
		if r, ok := repl[c.Root]; ok {
			c.Root = r
		}
	}
	return nil
}
