package eval

import (
	"fmt"

	"goldtrace/engine/hlo"
)

func init() {
	Register("custom-call", evalCustomCall)
	// Sharding annotations and the SPMD partitioner's shape markers are the
	// identity on one device, which is all the evaluator emulates for them.
	for _, target := range []string{"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost", "MoveToDevice"} {
		RegisterCustomCall(target, identityCustomCall)
	}
}

// evalCustomCall dispatches on custom_call_target through the registry.
func evalCustomCall(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	f, ok := LookupCustomCall(in.CustomCallTarget)
	if !ok {
		return Value{}, Unsupported("custom-call target %q (no handler registered)", in.CustomCallTarget)
	}
	v, err := f(ev, in, args)
	if err != nil {
		return Value{}, fmt.Errorf("custom-call %q: %w", in.CustomCallTarget, err)
	}
	return v, nil
}

func identityCustomCall(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 {
		return Value{}, fmt.Errorf("takes one operand, got %d", len(args))
	}
	return args[0], nil
}
