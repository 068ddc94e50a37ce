package sim

import (
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir"
)

// Device collectives (the cc_* instructions of nki.collectives): the k-th
// execution of a cc_* instruction on one device meets the k-th execution on
// every other device running the kernel. Ranks are device ids. Where
// nl.all_reduce stays within one launch, these leave the device, through
// Options.Devices; without it the kernel runs on one device, rank 0, where a
// group of that device alone is the identity and a group naming other
// devices is an error.
//
// Semantics follow the HLO collectives of the same names (engine/eval):
// reductions start from the op's identity and fold the members in group
// order in float32 (add, or std::min / std::max: a NaN never wins; f16 and
// 8-bit floats in f16 steps, as XLA:CPU's), then round once to the
// destination dtype (integers in their own width, sums wrapping); all_gather concatenates along
// collective_dim in group order; reduce_scatter keeps block i of the
// reduction for the member at position i; all_to_all sends block j to
// member j and concatenates what arrives in group order. collective_permute
// writes what the device whose pair targets this one sent; a device no pair
// targets leaves its destination as it was (the instruction writes only
// what it receives).

// DeviceComm connects a kernel run to the same kernel on the other devices
// of a multi-device run.
type DeviceComm interface {
	// Rank is this device's id; Size the number of devices (ids 0..Size-1).
	Rank() int64
	Size() int64
	// Exchange contributes data at site (the instruction's position among
	// the kernel's cc_* instructions) and returns every device's
	// contribution, indexed by device id; nil for a device whose data is not
	// available. Every device calls it once per execution of every cc_*
	// instruction, in program order, whatever its group.
	Exchange(site int, data []float64) ([][]float64, error)
}

type ccAux struct {
	site   int
	reduce string     // add / maximum / minimum; "" moves data
	groups [][]int64  // nil: one group of every device
	pairs  [][2]int64 // cc_collective_permute
	dim    int        // collective_dim
}

func prepDeviceCollective(c *compiler) func(ci *cinst) error {
	return func(ci *cinst) error {
		a := &ccAux{site: c.ccSites}
		c.ccSites++
		var err error
		if ci.op == "cc_all_reduce" || ci.op == "cc_reduce_scatter" {
			if a.reduce, err = ci.str("op", ""); err != nil {
				return err
			}
			switch a.reduce {
			case "add", "maximum", "minimum":
			default:
				return fmt.Errorf("op %q is not a collective reduction (add, maximum, minimum)", a.reduce)
			}
			if dt := ci.src[0].dt; !(dt.IsFloat() || dt.IsInteger()) || ci.dst[0].dt != dt {
				return fmt.Errorf("device collectives reduce float or integer tensors into their own dtype, not %v into %v", dt, ci.dst[0].dt)
			}
		}
		if ci.op == "cc_collective_permute" {
			if a.pairs, err = ir.SourceTargetPairs(ci.in); err != nil {
				return err
			}
		} else if a.groups, err = ir.ReplicaGroups(ci.in); err != nil {
			return err
		}
		s, d := ci.src[0], ci.dst[0]
		if _, ok := ci.attr("collective_dim"); ok {
			c64, err := ci.integer("collective_dim", 0)
			if err != nil {
				return err
			}
			if c64 < 0 || int(c64) >= len(s.shape) || len(s.shape) != len(d.shape) {
				return fmt.Errorf("collective_dim %d does not fit src tile %v and dst tile %v", c64, s.shape, d.shape)
			}
			a.dim = int(c64)
			for i := range s.shape {
				if i != a.dim && s.shape[i] != d.shape[i] {
					return fmt.Errorf("src tile %v and dst tile %v differ outside collective_dim %d", s.shape, d.shape, a.dim)
				}
			}
		} else if s.n != d.n {
			return fmt.Errorf("src tile %v and dst tile %v differ in size", s.shape, d.shape)
		}
		ci.aux = a
		return nil
	}
}

// group is the members of this device's group, in order, and its position.
func (a *ccAux) group(ci *cinst, rank, size int64) ([]int64, int, error) {
	where := func() string {
		if size == 1 {
			return "the kernel runs on one device (not inside a multi-device golden)"
		}
		return fmt.Sprintf("the kernel runs on %d devices", size)
	}
	if a.groups == nil {
		all := make([]int64, size)
		for i := range all {
			all[i] = int64(i)
		}
		return all, int(rank), nil
	}
	var mine []int64
	pos := -1
	for _, g := range a.groups {
		for i, r := range g {
			if r >= size {
				return nil, 0, ci.errf("runtime", "replica group %v names device %d, but %s", g, r, where())
			}
			if r == rank {
				mine, pos = g, i
			}
		}
	}
	if mine == nil {
		return nil, 0, ci.errf("runtime", "device %d is in no replica group of %v", rank, a.groups)
	}
	return mine, pos, nil
}

func runDeviceCollective(in *instance, ci *cinst) error {
	a := ci.aux.(*ccAux)
	src := ci.src[0]
	v, err := in.resolve(ci, src, nil, false)
	if err != nil {
		return err
	}
	buf := make([]float64, src.n)
	in.gather(v, src.shape, buf)
	dev := in.r.opts.Devices
	rank, size := int64(0), int64(1)
	if dev != nil {
		rank, size = dev.Rank(), dev.Size()
	}
	if size < 1 || rank < 0 || rank >= size {
		return ci.errf("runtime", "device %d of %d is not a device", rank, size)
	}
	// Who this device hears from, decided before the exchange so that a bad
	// group fails on every device alike.
	var members []int64
	pos := 0
	if a.pairs != nil {
		for _, p := range a.pairs {
			if p[0] >= size || p[1] >= size {
				return ci.errf("runtime", "source_target_pairs (%d, %d) names a device beyond the %d running the kernel", p[0], p[1], size)
			}
			if p[1] == rank {
				members = []int64{p[0]}
			}
		}
	} else if members, pos, err = a.group(ci, rank, size); err != nil {
		return err
	}
	var all [][]float64
	if dev == nil {
		all = [][]float64{buf}
	} else if all, err = dev.Exchange(a.site, buf); err != nil {
		return ci.errf("runtime", "%v", err)
	}
	if int64(len(all)) != size {
		return ci.errf("runtime", "the exchange returned %d devices' data, %d run", len(all), size)
	}
	parts := make([][]float64, len(members))
	for i, m := range members {
		if all[m] == nil {
			return ci.errf("runtime", "needs device %d's data, but device %d does not run this kernel here (a golden of one device: run every device with -e or -S; or a shard_map region over some of the mesh axes)", m, m)
		}
		if len(all[m]) != src.n {
			return ci.errf("runtime", "device %d contributed %d elements, this device %d", m, len(all[m]), src.n)
		}
		parts[i] = all[m]
	}
	n := int64(len(members))
	var res []float64
	switch ci.op {
	case "cc_collective_permute":
		if len(parts) == 0 {
			return nil // nobody sends here: the destination keeps its values
		}
		res = parts[0]
	case "cc_all_reduce":
		res = ccReduce(a.reduce, src.dt, parts)
	case "cc_all_gather":
		if int64(ci.dst[0].shape[a.dim]) != n*int64(src.shape[a.dim]) {
			return ci.errf("runtime", "dst tile %v must be src tile %v gathered from %d devices along dimension %d", ci.dst[0].shape, src.shape, n, a.dim)
		}
		res = concatAlong(parts, src.shape, a.dim)
	case "cc_reduce_scatter":
		if int64(src.shape[a.dim]) != n*int64(ci.dst[0].shape[a.dim]) {
			return ci.errf("runtime", "src tile %v must split into %d blocks of dst tile %v along dimension %d", src.shape, n, ci.dst[0].shape, a.dim)
		}
		blocks := make([][]float64, n)
		for i, p := range parts {
			blocks[i] = blockAlong(p, src.shape, a.dim, pos, int(n))
		}
		res = ccReduce(a.reduce, src.dt, blocks)
	case "cc_all_to_all":
		if int64(src.shape[a.dim])%n != 0 {
			return ci.errf("runtime", "src tile %v does not split into %d blocks along dimension %d", src.shape, n, a.dim)
		}
		blocks := make([][]float64, n)
		for i, p := range parts {
			blocks[i] = blockAlong(p, src.shape, a.dim, pos, int(n))
		}
		bs := append([]int{}, src.shape...)
		bs[a.dim] /= int(n)
		res = concatAlong(blocks, bs, a.dim)
	default:
		return ci.errf("invalid", "unknown device collective")
	}
	return in.writeDst(ci, res)
}

// ccReduce folds parts elementwise in order from the op's identity: floats
// in float32 (f16 and 8-bit floats rounded to f16 after every member, as
// XLA:CPU does), integers in their own width (sums wrap, as XLA's do).
func ccReduce(op string, dt dtype.Type, parts [][]float64) []float64 {
	if dt.IsInteger() {
		return ccReduceInt(op, dt, parts)
	}
	acc := make([]float32, len(parts[0]))
	var id float32
	switch op {
	case "maximum":
		id = float32(math.Inf(-1))
	case "minimum":
		id = float32(math.Inf(1))
	}
	for i := range acc {
		acc[i] = id
	}
	// XLA:CPU reduces f16 and the 8-bit floats in f16 arithmetic, rounding
	// after every member (bf16 is promoted to f32 and rounded once).
	var f16 []byte
	if dt == dtype.F16 || (dt.IsFloat() && dt.Bits() == 8) {
		f16 = make([]byte, 2*len(acc))
	}
	for _, p := range parts {
		switch op {
		case "add":
			for i, x := range p {
				acc[i] += float32(x)
			}
		case "maximum":
			for i, x := range p {
				if y := float32(x); acc[i] < y {
					acc[i] = y
				}
			}
		case "minimum":
			for i, x := range p {
				if y := float32(x); y < acc[i] {
					acc[i] = y
				}
			}
		}
		if f16 != nil {
			dtype.EncodeF32(dtype.F16, acc, f16)
			dtype.DecodeF32(dtype.F16, f16, acc)
		}
	}
	out := make([]float64, len(acc))
	for i, x := range acc {
		out[i] = float64(x)
	}
	return out
}

func ccReduceInt(op string, dt dtype.Type, parts [][]float64) []float64 {
	bits := uint(dt.Bits())
	var lo, hi int64
	if dt.IsSigned() {
		lo, hi = -1<<(bits-1), 1<<(bits-1)-1
	} else {
		lo, hi = 0, 1<<bits-1 // kernel integers are at most 32 bits
	}
	acc := make([]int64, len(parts[0]))
	for i := range acc {
		switch op {
		case "maximum":
			acc[i] = lo
		case "minimum":
			acc[i] = hi
		}
	}
	mask := int64(1)<<bits - 1
	for _, p := range parts {
		for i, x := range p {
			v := int64(x)
			switch op {
			case "add":
				s := (acc[i] + v) & mask
				if dt.IsSigned() && s > hi {
					s -= mask + 1
				}
				acc[i] = s
			case "maximum":
				acc[i] = max(acc[i], v)
			case "minimum":
				acc[i] = min(acc[i], v)
			}
		}
	}
	out := make([]float64, len(acc))
	for i, x := range acc {
		out[i] = float64(x)
	}
	return out
}

// outerInner splits a row-major shape at dimension d: the number of
// leading index combinations and the elements per index of d.
func outerInner(shape []int, d int) (outer, inner int) {
	outer, inner = 1, 1
	for _, x := range shape[:d] {
		outer *= x
	}
	for _, x := range shape[d+1:] {
		inner *= x
	}
	return outer, inner
}

// concatAlong joins row-major tiles of one shape along dimension d.
func concatAlong(parts [][]float64, shape []int, d int) []float64 {
	outer, inner := outerInner(shape, d)
	run := shape[d] * inner
	out := make([]float64, 0, len(parts)*len(parts[0]))
	for o := 0; o < outer; o++ {
		for _, p := range parts {
			out = append(out, p[o*run:(o+1)*run]...)
		}
	}
	return out
}

// blockAlong is block i of n equal blocks of a row-major tile along d.
func blockAlong(p []float64, shape []int, d, i, n int) []float64 {
	outer, inner := outerInner(shape, d)
	run := shape[d] * inner
	b := shape[d] / n * inner
	out := make([]float64, 0, outer*b)
	for o := 0; o < outer; o++ {
		out = append(out, p[o*run+i*b:o*run+(i+1)*b]...)
	}
	return out
}
