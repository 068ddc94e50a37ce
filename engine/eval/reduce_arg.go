package eval

// The argmax / argmin reduce as JAX lowers it: a variadic reduce of (value,
// index) pairs whose reducer keeps the accumulator's pair when its value
// compares greater (less) or is NaN, and on equal values the lower index.
// Recognized by the reducer's structure, it runs as a direct loop with the
// scalar machine's semantics step for step (compares see subnormals as
// signed zeros, selects move the operands' own bits), folding each group's
// elements in the same order from the init values, so the result is the
// scalar path's bit for bit; the reduced block is walked in place, without
// transposing either operand.

import (
	"math"
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// argReduceDisabled turns the direct argmax/argmin loop off
// (GOLDTRACE_NO_ARG_REDUCE=1), to compare.
var argReduceDisabled = os.Getenv("GOLDTRACE_NO_ARG_REDUCE") == "1"

// argReducer reports whether c is an argmax (dir "GT") or argmin ("LT")
// reducer over (float value, signed integer index) pairs:
//
//	p  = or(compare(v0, v1, dir), compare(v0, v0, NE))
//	v  = select(p, v0, v1)
//	i  = select(or(p, and(compare(v0, v1, EQ), compare(i0, i1, LT))), i0, i1)
//	ROOT tuple(v, i)
//
// with parameters (v0, i0, v1, i1), or's and and's operands in either order.
func argReducer(c *hlo.Computation) (dir string, ok bool) {
	if c == nil || len(c.Params) != 4 || c.Root == nil || c.Root.Opcode != "tuple" || len(c.Root.Operands) != 2 {
		return "", false
	}
	v0, i0, v1, i1 := c.Params[0], c.Params[1], c.Params[2], c.Params[3]
	for n, p := range []*hlo.Instruction{v0, i0, v1, i1} {
		if p.ParameterNumber != int64(n) || len(p.Shape.Dims) != 0 || len(p.Shape.Tuple) != 0 {
			return "", false
		}
	}
	vt, it := v0.Shape.Elem, i0.Shape.Elem
	if (vt != dtype.F32 && vt != dtype.F64) || (it != dtype.S32 && it != dtype.S64) || v1.Shape.Elem != vt || i1.Shape.Elem != it {
		return "", false
	}
	sv, si := c.Root.Operands[0], c.Root.Operands[1]
	if !isOp(sv, "select", 3) || !isOp(si, "select", 3) || sv.Operands[1] != v0 || sv.Operands[2] != v1 ||
		si.Operands[1] != i0 || si.Operands[2] != i1 {
		return "", false
	}
	p := sv.Operands[0]
	cmp := func(x *hlo.Instruction, d string, a, b *hlo.Instruction, ctype string) bool {
		if !isOp(x, "compare", 2) || x.ComparisonDirection != d || x.Operands[0] != a || x.Operands[1] != b {
			return false
		}
		t, err := x.EffectiveComparisonType()
		if t == "" {
			t = defaultComparison(a.Shape.Elem)
		}
		return err == nil && t == ctype
	}
	isP := func(x *hlo.Instruction) (string, bool) {
		if !isOp(x, "or", 2) {
			return "", false
		}
		for _, o := range [][2]*hlo.Instruction{{x.Operands[0], x.Operands[1]}, {x.Operands[1], x.Operands[0]}} {
			if !cmp(o[1], "NE", v0, v0, "FLOAT") {
				continue
			}
			for _, d := range []string{"GT", "LT"} {
				if cmp(o[0], d, v0, v1, "FLOAT") {
					return d, true
				}
			}
		}
		return "", false
	}
	dir, ok = isP(p)
	if !ok {
		return "", false
	}
	q := si.Operands[0]
	if !isOp(q, "or", 2) {
		return "", false
	}
	tie := func(a *hlo.Instruction) bool {
		if !isOp(a, "and", 2) {
			return false
		}
		for _, o := range [][2]*hlo.Instruction{{a.Operands[0], a.Operands[1]}, {a.Operands[1], a.Operands[0]}} {
			eq := cmp(o[0], "EQ", v0, v1, "FLOAT") || cmp(o[0], "EQ", v1, v0, "FLOAT")
			if eq && cmp(o[1], "LT", i0, i1, "SIGNED") {
				return true
			}
		}
		return false
	}
	for _, o := range [][2]*hlo.Instruction{{q.Operands[0], q.Operands[1]}, {q.Operands[1], q.Operands[0]}} {
		if d, ok := isP(o[0]); ok && d == dir && tie(o[1]) {
			return dir, true
		}
	}
	return "", false
}

func isOp(x *hlo.Instruction, op string, n int) bool {
	return x != nil && x.Opcode == op && len(x.Operands) == n && len(x.Shape.Dims) == 0 && len(x.Shape.Tuple) == 0
}

// argReduceFast evaluates an argReducer reduce of x (values) and ix
// (indices) over the dimensions marked in reduced, from the init values v0
// and i0, or returns nil when the operands do not fit (then the scalar path
// runs). The reduced dimensions must form one contiguous block: x is then
// outer × red × inner, and each result (o, c) folds x[o, k, c] for k
// increasing, the order of the transposed run.
func argReduceFast(dir string, x, ix, v0, i0 *tensor.Tensor, reduced []bool, outDims []int64) []*tensor.Tensor {
	if argReduceDisabled || x.Type != v0.Type || ix.Type != i0.Type || !equalDims(x.Dims, ix.Dims) {
		return nil
	}
	first, last := -1, -1
	for d, r := range reduced {
		if r {
			if first < 0 {
				first = d
			} else if last != d-1 {
				return nil
			}
			last = d
		}
	}
	outer, red, inner := int64(1), int64(1), int64(1)
	for d, n := range x.Dims {
		switch {
		case first >= 0 && d < first:
			outer *= n
		case first >= 0 && d <= last:
			red *= n
		default:
			inner *= n
		}
	}
	ov, oi := tensor.New(x.Type, outDims), tensor.New(ix.Type, outDims)
	gt := dir == "GT"
	switch {
	case x.Type == dtype.F32 && ix.Type == dtype.S32 && inner == 1:
		argRowsF32(gt, x.F32(), ix.I32(), v0.F32()[0], i0.I32()[0], ov.F32(), oi.I32(), outer, red)
	case x.Type == dtype.F32 && ix.Type == dtype.S32:
		argFold(gt, x.F32(), ix.I32(), v0.F32()[0], i0.I32()[0], ov.F32(), oi.I32(), outer, red, inner)
	case x.Type == dtype.F32 && ix.Type == dtype.S64:
		argFold(gt, x.F32(), ix.I64(), v0.F32()[0], i0.I64()[0], ov.F32(), oi.I64(), outer, red, inner)
	case x.Type == dtype.F64 && ix.Type == dtype.S32:
		argFold(gt, x.F64(), ix.I32(), v0.F64()[0], i0.I32()[0], ov.F64(), oi.I32(), outer, red, inner)
	case x.Type == dtype.F64 && ix.Type == dtype.S64:
		argFold(gt, x.F64(), ix.I64(), v0.F64()[0], i0.I64()[0], ov.F64(), oi.I64(), outer, red, inner)
	default:
		return nil
	}
	return []*tensor.Tensor{ov, oi}
}

// argStep is one application of the reducer to the accumulator (av, fa =
// flush(av), ai) and the element (bv, bi).
func argStep[F float, I int32 | int64](gt bool, av, fa F, ai I, bv F, bi I) (F, F, I) {
	fb := bv
	if f, ok := any(bv).(float32); ok {
		// flush as an exponent test (see argRowsF32)
		if math.Float32bits(f)&0x7f800000 == 0 {
			fb = bv * 0
		}
	} else {
		fb = flush(bv)
	}
	var p bool
	if gt {
		p = fa > fb || fa != fa
	} else {
		p = fa < fb || fa != fa
	}
	if p {
		return av, fa, ai
	}
	if !(fa == fb && ai < bi) {
		ai = bi
	}
	return bv, fb, ai
}

func argFold[F float, I int32 | int64](gt bool, xs []F, is []I, v0 F, i0 I, ov []F, oi []I, outer, red, inner int64) {
	if outer*inner == 0 {
		return
	}
	if inner == 1 {
		parallelForWork(int(outer), int(outer*red), func(lo, hi int) {
			for g := int64(lo); g < int64(hi); g++ {
				av, fa, ai := v0, flush(v0), i0
				x, ix := xs[g*red:(g+1)*red], is[g*red:(g+1)*red]
				for k, bv := range x {
					av, fa, ai = argStep(gt, av, fa, ai, bv, ix[k])
				}
				ov[g], oi[g] = av, ai
			}
		})
		return
	}
	// Columns: each chunk of a row of inner results folds the red rows of
	// its block top to bottom, the accumulators staying in the result.
	const chunk = 1024
	chunks := (inner + chunk - 1) / chunk
	parallelForWork(int(outer*chunks), int(outer*red*inner), func(lo, hi int) {
		fas := make([]F, chunk)
		for t := int64(lo); t < int64(hi); t++ {
			o, c0 := t/chunks, (t%chunks)*chunk
			c1 := min(c0+chunk, inner)
			av, ai, fa := ov[o*inner+c0:o*inner+c1], oi[o*inner+c0:o*inner+c1], fas[:c1-c0]
			f0 := flush(v0)
			for c := range av {
				av[c], ai[c], fa[c] = v0, i0, f0
			}
			for k := range red {
				base := (o*red+k)*inner + c0
				x, ix := xs[base:base+c1-c0], is[base:base+c1-c0]
				for c, bv := range x {
					av[c], fa[c], ai[c] = argStep(gt, av[c], fa[c], ai[c], bv, ix[c])
				}
			}
		}
	})
}

// argRowsF32 is argFold's row loop for f32 values and s32 indices, with
// flush spelled as an exponent test (a value with a zero exponent field is a
// zero or a subnormal, and flush gives its signed zero, v*0) and the
// direction chosen outside the loop; the steps are argStep's.
func argRowsF32(gt bool, xs []float32, is []int32, v0 float32, i0 int32, ov []float32, oi []int32, outer, red int64) {
	parallelForWork(int(outer), int(outer*red), func(lo, hi int) {
		for g := int64(lo); g < int64(hi); g++ {
			av, fa, ai := v0, flush(v0), i0
			x, ix := xs[g*red:(g+1)*red], is[g*red:(g+1)*red]
			ix = ix[:len(x)]
			for k, bv := range x {
				fb := bv
				if math.Float32bits(bv)&0x7f800000 == 0 {
					fb = bv * 0
				}
				if gt {
					if fa > fb || fa != fa {
						continue
					}
				} else if fa < fb || fa != fa {
					continue
				}
				if bi := ix[k]; !(fa == fb && ai < bi) {
					ai = bi
				}
				av, fa = bv, fb
			}
			ov[g], oi[g] = av, ai
		}
	})
}
