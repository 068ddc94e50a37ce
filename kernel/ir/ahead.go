package ir

import "goldtrace/kernel/ir/irpb"

// Checking ahead: while the tracer still streams a kernel's events, the
// builder's decode goroutine validates the top-level statements completed so
// far (Builder.CheckAhead), so that the finish (Builder.ValidateMarshal) is
// left with the rest and the kernel-level rules. It only ever answers "no
// error": an error, or anything whose verdict depends on the signature (a
// program id term: the grid; a write to a parameter: the outputs and mutable
// parameters), or a reference to what is not declared yet, gives up, and
// the finish validates the whole kernel afresh. Given up or not, the verdict
// and messages are Validate's.

type ahead struct {
	s     structChecker
	v     validator
	done  int         // top-level statements checked
	clean bool        // nothing found, no doubt: the checks so far stand
	body  wireEncoder // the statements checked, serialized (Marshal's field 7)
}

// CheckAhead validates the top-level statements completed since the last
// call. Not safe for use concurrently with the builder's other methods.
func (b *Builder) CheckAhead() {
	if b.done {
		return
	}
	end := len(b.k.Body)
	if len(b.open) > 0 {
		end-- // the open loop is not complete
	}
	b.checkAhead(end)
}

func (b *Builder) checkAhead(end int) {
	a := b.ahead
	if a == nil {
		a = &ahead{clean: true}
		a.s = structChecker{k: b.k, lazy: true, maxFile: -1}
		a.v = validator{k: b.k, budget: enumerationBudget, lazy: true}
		b.ahead = a
	}
	if !a.clean {
		return
	}
	defer func() {
		if recover() != nil {
			a.clean = false // whatever it was, Validate reports it
		}
	}()
	k := b.k
	for a.done < end {
		body := k.Body[a.done : a.done+1]
		a.s.stmts(body)
		if len(a.s.sink.list) > 0 || a.s.doubt {
			a.clean = false
			return
		}
		v := &a.v
		for len(v.uses) < len(k.Tensors) {
			v.uses = append(v.uses, span{-1, -1})
			v.returned = append(v.returned, false)
		}
		for len(v.vars) < int(k.NumVars) {
			v.vars = append(v.vars, varRange{})
		}
		v.stmts(body, false)
		if len(v.sink.list) > 0 || v.doubt {
			a.clean = false
			return
		}
		a.body.stmts(7, body)
		a.done++
	}
}

// ValidateMarshal is ValidateMarshal(k, done) for the kernel b finished,
// taking over what CheckAhead checked.
func (b *Builder) ValidateMarshal(k *irpb.Kernel, done func(b []byte, err error)) error {
	if b.ahead == nil || !b.done || k != b.k {
		return ValidateMarshal(k, done)
	}
	b.checkAhead(len(k.Body))
	a := b.ahead
	if !a.clean || a.done != len(k.Body) {
		return ValidateMarshal(k, done)
	}
	// what needs the signature: the kernel-level structure, the source
	// files named so far, then the kernel-level rules and capacity
	s := &structChecker{k: k}
	s.sink.files = k.Files
	if !s.kernelLevel() || len(s.sink.list) > 0 || int(a.s.maxFile) >= len(k.Files) {
		return ValidateMarshal(k, done)
	}
	body := a.body.b
	if body == nil {
		body = []byte{} // an empty body, written
	}
	startMarshal(k, body, done)
	v := &a.v
	v.sink.files = k.Files
	v.kernelRules()
	v.capacity()
	if len(v.sink.list) > 0 {
		return checkRules(k) // the errors as Validate orders them
	}
	return nil
}
