package golden

import (
	"math"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// SynthesizeInputs makes one input per ParamLeaves entry of m, deterministic
// for a given seed (the same seed always gives the same bytes, on any
// machine), with values that exercise a module the way real data would:
//
//   - pred: a causal mask (element [..,i,j] = j <= i) for parameters whose
//     name says mask or causal and have rank ≥ 2; otherwise fair coin flips;
//   - floats named like a scale ("scale", "x_scale", "scales"): powers of two
//     in [1/8, 8], so multiplying by them is exact; f8e8m0fnu likewise;
//   - other floats: uniform in [-1, 1), rounded once to the parameter type;
//   - complex: real and imaginary parts uniform in [-1, 1);
//   - integers: uniform in [0, bound), where bound is 16 (or less when the
//     type holds less); for parameters used directly as gather/scatter
//     indices or dynamic-slice starts, the bound keeps every index in range
//     so no clamping hides an indexing bug.
//
// Names are the parameter instruction's name and its metadata op_name.
func SynthesizeInputs(m *hlo.Module, seed uint64) []*tensor.Tensor {
	leaves := ParamLeaves(m)
	out := make([]*tensor.Tensor, len(leaves))
	for i, p := range leaves {
		r := newRNG(seed, uint64(i))
		name := strings.ToLower(p.Name)
		if p.Instr.Metadata != nil {
			name += " " + strings.ToLower(p.Instr.Metadata.OpName)
		}
		bound := int64(16)
		if p.Index == nil {
			if b, ok := indexBound(m.Entry, p.Instr); ok {
				bound = min(bound, b)
			}
		}
		out[i] = synthesize(p.Shape, name, bound, r)
	}
	return out
}

func synthesize(s hlo.Shape, name string, bound int64, r *rng) *tensor.Tensor {
	t := tensor.New(s.Elem, s.Dims)
	n := int(t.NumElements())
	switch typ := s.Elem; {
	case typ == dtype.Pred:
		b := t.Bools()
		if (strings.Contains(name, "mask") || strings.Contains(name, "causal")) && len(s.Dims) >= 2 {
			rows, cols := s.Dims[len(s.Dims)-2], s.Dims[len(s.Dims)-1]
			for k := range b {
				i, j := int64(k)/cols%rows, int64(k)%cols
				b[k] = j <= i
			}
		} else {
			for k := range b {
				b[k] = r.next()&1 == 1
			}
		}
	case typ.IsFloat():
		vals := make([]float32, n)
		if isScaleName(name) || typ == dtype.F8E8M0FNU {
			for k := range vals {
				vals[k] = float32(math.Ldexp(1, int(r.below(7))-3))
			}
		} else {
			for k := range vals {
				vals[k] = float32(r.uniform()*2 - 1)
			}
		}
		dtype.EncodeF32(typ, vals, t.Data)
	case typ == dtype.C64:
		c := t.C64()
		for k := range c {
			c[k] = complex(float32(r.uniform()*2-1), float32(r.uniform()*2-1))
		}
	case typ == dtype.C128:
		c := t.C128()
		for k := range c {
			c[k] = complex(r.uniform()*2-1, r.uniform()*2-1)
		}
	case typ.IsInteger():
		hi := bound
		if typ.Bits() < 63 {
			maxVal := int64(1)<<(typ.Bits()) - 1 // unsigned
			if typ.IsSigned() {
				maxVal = int64(1)<<(typ.Bits()-1) - 1
			}
			hi = min(hi, maxVal+1)
		}
		hi = max(hi, 1)
		size := typ.Size()
		for k := range n {
			storeInt(t.Data, size, k, dtype.EncodeInt(typ, int64(r.below(uint64(hi)))))
		}
	}
	return t
}

func storeInt(dst []byte, size, i int, bits uint64) {
	for b := range size {
		dst[i*size+b] = byte(bits >> (8 * b))
	}
}

func isScaleName(name string) bool {
	for _, f := range strings.FieldsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if f == "scale" || f == "scales" || strings.HasSuffix(f, "scale") {
			return true
		}
	}
	return strings.Contains(name, "_scale")
}

// indexBound finds the largest safe exclusive bound for the values of p when
// a user in c reads it as indices; ok is false when none does.
func indexBound(c *hlo.Computation, p *hlo.Instruction) (bound int64, ok bool) {
	bound = math.MaxInt64
	tighten := func(b int64) {
		bound, ok = min(bound, max(b, 1)), true
	}
	for _, in := range c.Instructions {
		for k, op := range in.Operands {
			if op != p || len(in.Operands) == 0 {
				continue
			}
			base := in.Operands[0].Shape
			switch {
			case in.Opcode == "dynamic-slice" && k >= 1:
				d := k - 1
				if d < len(base.Dims) && d < len(in.DynamicSliceSizes) {
					tighten(base.Dims[d] - in.DynamicSliceSizes[d] + 1)
				}
			case in.Opcode == "dynamic-update-slice" && k >= 2 && len(in.Operands) > 1:
				d, upd := k-2, in.Operands[1].Shape
				if d < len(base.Dims) && d < len(upd.Dims) {
					tighten(base.Dims[d] - upd.Dims[d] + 1)
				}
			case in.Opcode == "gather" && k == 1 && in.GatherDims != nil:
				for _, d := range in.GatherDims.StartIndexMap {
					if int(d) < len(base.Dims) && int(d) < len(in.GatherSliceSizes) {
						tighten(base.Dims[d] - in.GatherSliceSizes[d] + 1)
					}
				}
			case in.Opcode == "scatter" && in.ScatterDims != nil && k == (len(in.Operands)-1)/2:
				// scatter(operands..., indices, updates...): indices sit in the middle.
				for _, d := range in.ScatterDims.ScatterDimsToOperandDims {
					if int(d) < len(base.Dims) {
						tighten(base.Dims[d])
					}
				}
			}
		}
	}
	return bound, ok
}

// rng is splitmix64: tiny, fast, and fully specified here, so synthesized
// inputs never change with a Go release.
type rng struct{ s uint64 }

func newRNG(seed, stream uint64) *rng {
	r := &rng{s: seed ^ (stream+1)*0x9e3779b97f4a7c15}
	r.next()
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uniform is in [0, 1) with 53 random bits.
func (r *rng) uniform() float64 { return float64(r.next()>>11) * 0x1p-53 }

// below is uniform in [0, n) for n ≥ 1 (the modulo bias is at most n/2^64).
func (r *rng) below(n uint64) uint64 { return r.next() % n }
