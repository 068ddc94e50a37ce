package golden

import (
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// log1pPairs turns each f32 or f64 log1p(a) that has a log1p(negate(a))
// beside it, both read by one instruction other than a tuple (so XLA:CPU
// compiles them in one loop fusion: jax's atanh subtracts them; returned
// as two outputs, they are two fusions and stay plain log1p), into eval.Log1pPairTarget
// calls: there LLVM shares a*a and a*a*(-1/2) between the two, which moves
// an FMA of each (see eval.Log1pPairTarget). Measured against jax.jit: f64
// atanh differed on 0.09% of values with plain log1p, f32 atanh on 0.4%.
func log1pPairs(c *hlo.Computation) {
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			users[op] = append(users[op], in)
		}
	}
	isLog1p := func(in *hlo.Instruction) bool {
		return in.Opcode == "log-plus-one" && len(in.Operands) == 1 &&
			(in.Shape.Elem == dtype.F32 || in.Shape.Elem == dtype.F64)
	}
	shareUser := func(a, b *hlo.Instruction) bool {
		for _, u := range users[a] {
			for _, v := range users[b] {
				// A tuple of the two is not one fusion: XLA compiles them apart.
				if u == v && u.Opcode != "tuple" {
					return true
				}
			}
		}
		return false
	}
	var pairs [][2]*hlo.Instruction
	for _, l := range c.Instructions {
		if !isLog1p(l) {
			continue
		}
		a := l.Operands[0]
		for _, neg := range users[a] {
			if neg.Opcode != "negate" {
				continue
			}
			for _, m := range users[neg] {
				if isLog1p(m) && m.Shape.Elem == l.Shape.Elem && shareUser(l, m) {
					pairs = append(pairs, [2]*hlo.Instruction{l, m})
				}
			}
		}
	}
	for _, p := range pairs {
		for _, in := range p {
			in.Opcode, in.CustomCallTarget = "custom-call", eval.Log1pPairTarget
		}
	}
}

// foldsIntoSelect64 reports whether the f64 multiply m is a constant times
// a value whose XLA:CPU code ends in selects with constant arms: exp
// (select(x < lo, 0, select(x > hi, inf, v*s)), eval's exp64), logistic
// (1 and 0), and such a value through add, subtract, multiply, divide,
// maximum, minimum with a constant or negate, each read once. LLVM's
// instruction combining moves the constant factor into the selects' arms
// (select(c, 0*k, r*k)), so the product sits under a select and no longer
// contracts into the add or subtract that reads it: exp(x)*0.3 + y rounds
// twice (measured: contracting differed from jax.jit on 16% of f64 values,
// and on 7% for logistic). f32 exp and logistic end in arithmetic, not
// selects, and contract.
func foldsIntoSelect64(m *hlo.Instruction, oneUse func(*hlo.Instruction) bool) bool {
	if m.Shape.Elem != dtype.F64 {
		return false // the common case, before any scan for uses
	}
	if len(m.Operands) != 2 {
		return false
	}
	a, b := m.Operands[0], m.Operands[1]
	if isConstantTree(a) {
		a, b = b, a
	}
	return isConstantTree(b) && endsInConstantSelect64(a, oneUse)
}

func endsInConstantSelect64(v *hlo.Instruction, oneUse func(*hlo.Instruction) bool) bool {
	if v.Shape.Elem != dtype.F64 || !oneUse(v) {
		return false
	}
	switch v.Opcode {
	case "exponential", "logistic":
		return true
	case "negate":
		return endsInConstantSelect64(v.Operands[0], oneUse)
	case "add", "subtract", "multiply", "divide", "maximum", "minimum":
		if len(v.Operands) != 2 {
			return false
		}
		a, b := v.Operands[0], v.Operands[1]
		if isConstantTree(a) {
			a, b = b, a
		}
		return isConstantTree(b) && endsInConstantSelect64(a, oneUse)
	}
	return false
}

// oneLiveUse reports whether in is read once in the computation being
// rewritten as XLA's fusion has it: uses by instructions nothing reads (an
// earlier rewrite replaced them, as A*C1 after (A*C1)*C2 became A*(C1*C2);
// they stay in the list until pruneDead) do not count, and identical
// instructions count as one, as XLA's CSE merges them (jnp.exp(x) written
// twice is one exp read twice).
func (r *xlaRewriter) oneLiveUse(in *hlo.Instruction) bool {
	if r.isNew(in) {
		return true
	}
	memo := map[*hlo.Instruction]string{}
	want := mathValue(in, memo)
	seen := map[string]bool{}
	for _, u := range r.c.Instructions {
		if r.uses[u] == 0 && u != r.c.Root {
			continue
		}
		for k, op := range u.Operands {
			if op == in || mathValue(op, memo) == want {
				seen[fmt.Sprintf("%s/%d", mathValue(u, memo), k)] = true
			}
		}
	}
	if in == r.c.Root {
		seen["root"] = true
	}
	return len(seen) == 1
}

// mathValue is cseValue that also looks through exp and logistic.
func mathValue(in *hlo.Instruction, memo map[*hlo.Instruction]string) string {
	if v, ok := memo[in]; ok {
		return v
	}
	v := "#" + in.Name
	if (cseValueOps[in.Opcode] || in.Opcode == "exponential" || in.Opcode == "logistic") && len(in.Called) == 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:%v%v%v(", in.Opcode, in.Shape.Elem, in.Shape.Dims, in.Dimensions)
		for _, o := range in.Operands {
			b.WriteString(mathValue(o, memo))
			b.WriteByte(',')
		}
		b.WriteByte(')')
		v = b.String()
	}
	memo[in] = v
	return v
}
