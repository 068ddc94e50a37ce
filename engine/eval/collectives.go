package eval

// Collectives on a single device (replica_count = num_partitions = 1): every
// replica group holds only this device, so all-reduce, all-gather,
// reduce-scatter, all-to-all and collective-broadcast return their operands
// (XLA simplifies single-participant collectives to their operand), and
// collective-permute delivers the operand only when a pair sends this device
// to itself; an untargeted device receives zeros.

import (
	"fmt"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	for _, op := range []string{"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-broadcast"} {
		Register(op, evalSingleDeviceCollective)
	}
	Register("collective-permute", evalCollectivePermute)
	Register("replica-id", func(ev *Evaluator, _ *hlo.Instruction, _ []Value) (Value, error) {
		return u32Scalar(ev.Options.ReplicaID), nil
	})
	Register("partition-id", func(ev *Evaluator, _ *hlo.Instruction, _ []Value) (Value, error) {
		return u32Scalar(ev.Options.PartitionID), nil
	})
}

func u32Scalar(v int64) Value {
	t := tensor.New(dtype.U32, nil)
	t.U32()[0] = uint32(v)
	return ArrayValue(t)
}

// checkSingleDevice rejects modules that need more than one device.
func checkSingleDevice(ev *Evaluator) error {
	if m := ev.Module; m != nil && (m.ReplicaCount > 1 || m.NumPartitions > 1) {
		return fmt.Errorf("collectives over %d replicas x %d partitions are not emulated; only one device is", max(m.ReplicaCount, 1), max(m.NumPartitions, 1))
	}
	return nil
}

func evalSingleDeviceCollective(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if err := checkSingleDevice(ev); err != nil {
		return Value{}, err
	}
	if len(args) == 0 {
		return Value{}, fmt.Errorf("expected operands")
	}
	var r Value
	if len(args) == 1 {
		r = args[0]
	} else {
		r = TupleValue(append([]Value{}, args...)...)
	}
	// all-gather and reduce-scatter over one member keep the operand's dims;
	// check so a mis-sized module fails instead of producing a wrong shape.
	if in.Shape.IsArray() && r.T != nil && !equalDims(in.Shape.Dims, r.T.Dims) && !in.Shape.IsTuple() {
		return Value{}, fmt.Errorf("on one device %s returns %v, but the result is declared %v", in.Opcode, r.T, in.Shape.Dims)
	}
	return r, nil
}

func evalCollectivePermute(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if err := checkSingleDevice(ev); err != nil {
		return Value{}, err
	}
	if len(args) < 1 {
		return Value{}, fmt.Errorf("expected an operand")
	}
	self := ev.Options.ReplicaID
	if in.ChannelID != 0 {
		self = ev.Options.PartitionID
	}
	for _, p := range in.SourceTargetPairs {
		if p[0] == self && p[1] == self {
			return args[0], nil
		}
	}
	return zeroLike(args[0]), nil
}

// zeroLike is a value with v's structure and zeros everywhere.
func zeroLike(v Value) Value {
	switch {
	case v.T != nil:
		return ArrayValue(tensor.New(v.T.Type, v.T.Dims))
	case v.Token:
		return v
	}
	elems := make([]Value, len(v.Tuple))
	for i, e := range v.Tuple {
		elems[i] = zeroLike(e)
	}
	return TupleValue(elems...)
}
