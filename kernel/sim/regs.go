package sim

import "fmt"

// Engine accumulator registers (nisa.reduce_cmd). The scalar engine keeps
// one float32 register per partition lane that activation's free-axis
// reduction can reset, accumulate into or overwrite, across instructions;
// reduce_res reads them out. range_select and select_reduce drive the vector
// engine's registers the same way. Numbering as in the NKI stubs.
const (
	regIdle        = 0 // registers untouched
	regReset       = 1 // registers = 0
	regReduce      = 2 // registers = op(registers, this instruction's reduction)
	regResetReduce = 3 // registers = this instruction's reduction
	numRegs        = 128
)

// regCmd is an instruction's register command. Without one (the attribute
// absent, or idle) reduce_res receives the instruction's own reduction, as
// activation_reduce and the legacy reduce_res= do, and the registers keep
// their value.
type regCmd struct {
	cmd  int64
	bank string
}

func (c regCmd) stateful() bool { return c.cmd != regIdle }

func prepRegCmd(ci *cinst, bank string) (regCmd, error) {
	v, err := ci.integer("reduce_cmd", regIdle)
	if err != nil {
		return regCmd{}, err
	}
	if v < regIdle || v > regResetReduce {
		return regCmd{}, fmt.Errorf("unknown reduce_cmd %d (idle 0, reset 1, reduce 2, reset_reduce 3)", v)
	}
	return regCmd{cmd: v, bank: bank}, nil
}

// applyRegs runs c on the instance's registers with the instruction's
// per-partition reduction r (nil when it reduced nothing) over P partitions,
// and returns what reduce_res receives.
func (in *instance) applyRegs(c regCmd, op *binop, r []float64, P int) ([]float64, error) {
	if !c.stateful() {
		return r, nil
	}
	if P > numRegs {
		return nil, fmt.Errorf("reduce_cmd over %d partitions; the engine has %d accumulator registers", P, numRegs)
	}
	if in.regs == nil {
		in.regs = map[string][]float64{}
	}
	regs := in.regs[c.bank]
	if regs == nil {
		regs = make([]float64, numRegs)
		in.regs[c.bank] = regs
	}
	switch c.cmd {
	case regReset:
		clear(regs)
	case regResetReduce, regReduce:
		if r == nil {
			return nil, fmt.Errorf("reduce_cmd %d needs a reduce_op", c.cmd)
		}
		for p := 0; p < P; p++ {
			v := float32(r[p])
			if c.cmd == regReduce {
				v = op.f(float32(regs[p]), v)
			}
			regs[p] = float64(v)
		}
	}
	return append([]float64(nil), regs[:P]...), nil
}

// instRegs is the register command of a compiled instruction (none for ops
// without registers).
func instRegs(ci *cinst) regCmd {
	switch a := ci.aux.(type) {
	case actAux:
		return a.regs
	case rangeSelAux:
		return a.regs
	case selRedAux:
		return a.regs
	}
	return regCmd{}
}
