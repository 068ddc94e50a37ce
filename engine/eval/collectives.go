package eval

// Collectives across emulated devices. Each device's evaluator finds the
// devices of its group (collectives_groups.go), hands its operands to
// Options.Exchange, which returns every member's operands in group order, and
// computes its own share of the result from them:
//
//   - all-reduce reduces the members' operands as XLA:CPU's in-process
//     collectives do (collectives_reduce.go);
//   - all-gather concatenates them along dimensions[0] in group order;
//   - reduce-scatter reduces, and member i keeps block i along dimensions[0];
//   - all-to-all splits along dimensions[0], sends block i to member i and
//     concatenates what it receives in group order; without dimensions it
//     sends operand i to member i;
//   - collective-permute delivers the operand of the device whose pair
//     targets this one, and zeros when none does;
//   - collective-broadcast delivers the first member's operand.
//
// The -start forms run synchronously through the generic async wrapper.
// With no Exchange (a single-device run) only groups of this device alone
// are served, so one-device modules behave as before.

import (
	"fmt"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("all-reduce", evalAllReduce)
	Register("all-gather", evalAllGather)
	Register("reduce-scatter", evalReduceScatter)
	Register("all-to-all", evalAllToAll)
	Register("collective-permute", evalCollectivePermute)
	Register("collective-broadcast", evalCollectiveBroadcast)
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

// exchange contributes this device's operands and returns each group
// member's operand arrays in group order. Members must contribute operands
// of this device's types and dimensions, as XLA requires.
func (ev *Evaluator) exchange(in *hlo.Instruction, group []int64, args []Value) ([][]*tensor.Tensor, error) {
	mine, err := collectiveOperands(args)
	if err != nil {
		return nil, err
	}
	self := ev.grid().Self()
	if len(group) == 1 && group[0] == self {
		return [][]*tensor.Tensor{mine}, nil
	}
	if ev.Options.Exchange == nil {
		return nil, fmt.Errorf("this %s spans devices %v, but the evaluator emulates one device; run every device with an exchange (golden: -e/--emulate-multiple-devices or -S)", in.Opcode, group)
	}
	vals, err := ev.Options.Exchange(in, group, TupleValue(args...))
	if err != nil {
		return nil, err
	}
	if len(vals) != len(group) {
		return nil, fmt.Errorf("exchange returned %d values for a group of %d devices", len(vals), len(group))
	}
	out := make([][]*tensor.Tensor, len(vals))
	for i, v := range vals {
		if out[i], err = collectiveOperands(v.Tuple); err != nil {
			return nil, fmt.Errorf("device %d: %w", group[i], err)
		}
		if len(out[i]) != len(mine) {
			return nil, fmt.Errorf("device %d contributed %d operands, this device %d", group[i], len(out[i]), len(mine))
		}
		for k, t := range out[i] {
			if t.Type != mine[k].Type || !equalDims(t.Dims, mine[k].Dims) {
				return nil, fmt.Errorf("device %d contributed %v as operand %d, this device %v", group[i], t, k, mine[k])
			}
		}
	}
	return out, nil
}

// collectiveOperands checks that every operand is an array.
func collectiveOperands(args []Value) ([]*tensor.Tensor, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("expected operands")
	}
	return arrayArgs(args, len(args))
}

// groupExchange finds in's group and exchanges operands with it; it returns
// the members' operands and this device's rank in the group.
func (ev *Evaluator) groupExchange(in *hlo.Instruction, args []Value) ([][]*tensor.Tensor, int, error) {
	group, rank, err := CollectiveParticipants(in, ev.grid())
	if err != nil {
		return nil, 0, err
	}
	vals, err := ev.exchange(in, group, args)
	return vals, rank, err
}

// column returns operand k of every member.
func column(vals [][]*tensor.Tensor, k int) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(vals))
	for i, v := range vals {
		out[i] = v[k]
	}
	return out
}

// checkResult compares a computed value with the instruction's declared
// shape, so a mis-sized module fails instead of producing a wrong shape. The
// -start forms declare the async tuple and are shaped by the async wrapper.
func checkResult(in *hlo.Instruction, v Value) (Value, error) {
	if strings.HasSuffix(in.Opcode, "-start") || shapeMatches(in.Shape, v) {
		return v, nil
	}
	var got []string
	for _, t := range v.Leaves() {
		got = append(got, t.String())
	}
	return Value{}, fmt.Errorf("computed %s, but the result is declared with other dimensions or type", strings.Join(got, ", "))
}

// collectiveDim is dimensions[0], checked against the operands' rank.
func collectiveDim(in *hlo.Instruction, ts []*tensor.Tensor) (int, error) {
	if len(in.Dimensions) != 1 {
		return 0, fmt.Errorf("%s needs one dimension, has %v", in.Opcode, in.Dimensions)
	}
	d := in.Dimensions[0]
	for _, t := range ts {
		if d < 0 || d >= int64(t.Rank()) {
			return 0, fmt.Errorf("dimension %d is out of range for operand %v", d, t)
		}
	}
	return int(d), nil
}

func evalAllReduce(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	vals, _, err := ev.groupExchange(in, args)
	if err != nil {
		return Value{}, err
	}
	outs := make([]*tensor.Tensor, len(args))
	for k := range outs {
		if outs[k], err = ev.allReduceArrays(in.ToApply(), column(vals, k)); err != nil {
			return Value{}, err
		}
	}
	return checkResult(in, packResults(outs))
}

func evalAllGather(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	vals, _, err := ev.groupExchange(in, args)
	if err != nil {
		return Value{}, err
	}
	d, err := collectiveDim(in, vals[0])
	if err != nil {
		return Value{}, err
	}
	outs := make([]*tensor.Tensor, len(args))
	for k := range outs {
		outs[k] = concatAlong(column(vals, k), d)
	}
	return checkResult(in, packResults(outs))
}

func evalReduceScatter(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	vals, rank, err := ev.groupExchange(in, args)
	if err != nil {
		return Value{}, err
	}
	d, err := collectiveDim(in, vals[0])
	if err != nil {
		return Value{}, err
	}
	n := int64(len(vals))
	outs := make([]*tensor.Tensor, len(args))
	for k := range outs {
		// Reducing only this member's block gives the same elements as
		// reducing everything and keeping the block.
		blocks := make([]*tensor.Tensor, n)
		for i, t := range column(vals, k) {
			if blocks[i], err = blockAlong(t, d, int64(rank), n); err != nil {
				return Value{}, err
			}
		}
		if outs[k], err = ev.allReduceArrays(in.ToApply(), blocks); err != nil {
			return Value{}, err
		}
	}
	return checkResult(in, packResults(outs))
}

func evalAllToAll(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	vals, rank, err := ev.groupExchange(in, args)
	if err != nil {
		return Value{}, err
	}
	n := int64(len(vals))
	if len(in.Dimensions) == 0 {
		// Tuple form: operand i goes to member i.
		if int64(len(args)) != n {
			return Value{}, fmt.Errorf("all-to-all without dimensions needs one operand per group member (%d), has %d", n, len(args))
		}
		outs := make([]Value, n)
		for i, v := range vals {
			outs[i] = ArrayValue(v[rank])
		}
		return checkResult(in, TupleValue(outs...))
	}
	if len(args) != 1 {
		return Value{}, fmt.Errorf("all-to-all with dimensions takes one operand, has %d", len(args))
	}
	d, err := collectiveDim(in, vals[0])
	if err != nil {
		return Value{}, err
	}
	blocks := make([]*tensor.Tensor, n)
	for i, v := range vals {
		if blocks[i], err = blockAlong(v[0], d, int64(rank), n); err != nil {
			return Value{}, err
		}
	}
	return checkResult(in, ArrayValue(concatAlong(blocks, d)))
}

func evalCollectivePermute(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	line, self, err := permuteLine(in, ev.grid())
	if err != nil {
		return Value{}, err
	}
	vals, err := ev.exchange(in, line, args)
	if err != nil {
		return Value{}, err
	}
	var from []*tensor.Tensor
	for _, p := range in.SourceTargetPairs {
		if p[1] == self && p[0] >= 0 && p[0] < int64(len(vals)) {
			from = vals[p[0]]
			break
		}
	}
	outs := make([]*tensor.Tensor, len(args))
	for k := range outs {
		if from == nil {
			outs[k] = tensor.New(vals[0][k].Type, vals[0][k].Dims)
		} else {
			// A copy, so devices never share a result's storage.
			outs[k] = from[k].Clone()
		}
	}
	return checkResult(in, packResults(outs))
}

func evalCollectiveBroadcast(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	vals, _, err := ev.groupExchange(in, args)
	if err != nil {
		return Value{}, err
	}
	outs := make([]*tensor.Tensor, len(args))
	for k, t := range vals[0] {
		outs[k] = t.Clone()
	}
	return checkResult(in, packResults(outs))
}

// concatAlong joins equal-typed tensors along dimension d.
func concatAlong(ts []*tensor.Tensor, d int) *tensor.Tensor {
	dims := append([]int64{}, ts[0].Dims...)
	dims[d] = 0
	for _, t := range ts {
		dims[d] += t.Dims[d]
	}
	out := tensor.New(ts[0].Type, dims)
	dv := dense(dims)
	for _, t := range ts {
		copyView(t.Type.Size(), t.Dims, out.Data, dv, t.Data, dense(t.Dims))
		dv.off += t.Dims[d] * dv.strides[d]
	}
	return out
}

// blockAlong copies block i of n equal blocks of t along dimension d.
func blockAlong(t *tensor.Tensor, d int, i, n int64) (*tensor.Tensor, error) {
	if t.Dims[d]%n != 0 {
		return nil, fmt.Errorf("dimension %d of %v does not split into %d equal blocks", d, t, n)
	}
	dims := append([]int64{}, t.Dims...)
	dims[d] /= n
	out := tensor.New(t.Type, dims)
	sv := dense(t.Dims)
	sv.off = i * dims[d] * sv.strides[d]
	copyView(t.Type.Size(), dims, out.Data, dense(dims), t.Data, sv)
	return out, nil
}
