package eval

// Blocked evaluation of f64 groups. planFusion groups f64 elementwise DAGs
// as it groups f32 ones; a worker's block buffers (float32 slabs) hold twice
// as many float32 words, seen here as float64. Each member's block is what
// the op-by-op evaluation computes on the whole array (elementwise.go's
// classF64 paths): unary ops flush their operand and result unless
// keepsSubnormals64 (XLA's f64 tanh flushes), binary ops flush both operands
// and the result, compares see subnormals as zeros, abs and negate and select
// move bits, fused multiply-adds (FMATarget) round once and flush nothing,
// as evalFMA does, and a trailing reduce folds each row left to right as
// reduceFast does for operands of ynnMinElements or more.

import (
	"fmt"
	"math"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// f64View is a float32 buffer's words seen as len/2 float64s.
func f64View(b []float32) []float64 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/2)
}

// f64Bits is xs seen as its bit patterns.
func f64Bits(xs []float64) []uint64 {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&xs[0])), len(xs))
}

// eval64 is eval for an f64 group.
func (g *fusedGroup) eval64(ev *Evaluator, vals func(*hlo.Instruction) (Value, bool)) (Value, []Value, error) {
	n := len(g.members)
	ext := fuseInputs{f: make([][][]float32, n), pred: make([][]byte, n)}
	var extras []Value
	if len(g.extras) > 0 {
		ext.out = make([][]float32, n)
		for _, j := range g.extraPos {
			t := ev.newTensor(g.elem, g.dims, false) // every block is written
			ext.out[j] = rawView[float32](t.Data)
			extras = append(extras, ArrayValue(t))
		}
	}
	for j, m := range g.members {
		ext.f[j] = make([][]float32, len(m.Operands))
		for k, op := range m.Operands {
			if _, in := g.pos[op]; in {
				continue
			}
			v, ok := vals(op)
			if g.kinds[j] == fuseSelect && k == 0 || g.kinds[j] == fusePred {
				if !ok || v.T == nil || v.T.Type != dtype.Pred || !equalDims(v.T.Dims, g.dims) {
					return Value{}, nil, fmt.Errorf("operand %%%s has no pred array value", op.Name)
				}
				if g.kinds[j] == fuseSelect {
					ext.pred[j] = v.T.Data
					continue
				}
				if ext.predArgs == nil {
					ext.predArgs = make([][][]byte, n)
				}
				if ext.predArgs[j] == nil {
					ext.predArgs[j] = make([][]byte, len(m.Operands))
				}
				ext.predArgs[j][k] = v.T.Data
				continue
			}
			if !ok || v.T == nil || v.T.Type != dtype.F64 {
				return Value{}, nil, fmt.Errorf("operand %%%s has no f64 array value", op.Name)
			}
			ext.f[j][k] = rawView[float32](v.T.Data)
		}
	}
	total := int(tensor.NumElements(g.dims))
	if g.reduce == nil {
		out := ev.newTensor(g.elem, g.dims, false) // every block is written
		blocks := (total + fuseBlock - 1) / fuseBlock
		blk := min(fuseBlock, total)
		o := rawView[float64](out.Data)
		parallelPull(blocks, total*n, func(lo, hi int) {
			w := getFuseWorker(g, 2*blk)
			defer putFuseWorker(w)
			for b := lo; b < hi; b++ {
				s, e := b*fuseBlock, min((b+1)*fuseBlock, total)
				w.block64(g, ext, s, e, o[s:e])
			}
		})
		return ArrayValue(out), extras, nil
	}
	iv, ok := vals(g.reduce.Operands[1])
	if !ok || iv.T == nil || iv.T.Type != dtype.F64 || iv.T.NumElements() != 1 {
		return Value{}, nil, fmt.Errorf("operand %%%s has no f64 scalar value", g.reduce.Operands[1].Name)
	}
	i0 := iv.T.F64()[0]
	rank := len(g.dims)
	runLen := int(tensor.NumElements(g.dims[rank-len(g.reduce.Dimensions):]))
	out := tensor.New(dtype.F64, g.reduce.Shape.Dims)
	o := out.F64()
	rows := len(o)
	if runLen == 0 {
		for i := range o {
			o[i] = i0
		}
		return ArrayValue(out), extras, nil
	}
	rowBlock := max(fuseBlock, min(4*runLen, fuseRowBlock))
	whole := runLen <= rowBlock
	blk := min(fuseBlock, total)
	if whole {
		blk = min(rowBlock/runLen*runLen, total)
	}
	parallelPull(rows, total*n, func(lo, hi int) {
		w := getFuseWorker(g, 2*blk)
		defer putFuseWorker(w)
		buf := f64View(w.out)
		if whole {
			per := blk / runLen
			for r := lo; r < hi; r += per {
				re := min(r+per, hi)
				s, e := r*runLen, re*runLen
				w.block64(g, ext, s, e, buf[:e-s])
				foldRows(g.op, i0, buf[:e-s], runLen, o[r:re])
			}
			return
		}
		for r := lo; r < hi; r++ {
			acc := i0
			for s := r * runLen; s < (r+1)*runLen; s += fuseBlock {
				e := min(s+fuseBlock, (r+1)*runLen)
				w.block64(g, ext, s, e, buf[:e-s])
				acc = foldFloat(g.op, acc, buf[:e-s])
			}
			o[r] = acc
		}
	})
	return ArrayValue(out), extras, nil
}

// block64 is block for an f64 group: elements [s, e) of every member, the
// root's to o.
func (w *fuseWorker) block64(g *fusedGroup, ext fuseInputs, s, e int, o []float64) {
	n := len(g.members)
	l := e - s
	clear(w.states)
	clear(w.estate)
	buf := func(j int) []float64 { return f64View(w.bufs[j][:2*l]) }
	for j, m := range g.members {
		dst := o
		if j < n-1 {
			dst = buf(j)
		}
		ref := func(k int) int {
			if id := g.extID[j][k]; id >= 0 {
				return ^id
			}
			return g.opPos[j][k]
		}
		arg := func(k int) []float64 {
			if x := ext.f[j][k]; x != nil {
				if g.kinds[j].gathers() {
					return f64View(x)
				}
				return f64View(x[2*s : 2*e])
			}
			return buf(g.opPos[j][k])
		}
		daz := func(k int, tmp []float32) []float64 {
			x := arg(k)
			switch w.resolve(g, ref(k)) {
			case blockClean:
				return x
			case blockUnknown:
				i := firstSubnormal(x)
				if i < 0 {
					w.learn(g, ref(k), blockClean)
					return x
				}
				w.learn(g, ref(k), blockDirty)
				t := f64View(tmp[:2*len(x)])
				copy(t, x)
				ftz(t[i:])
				return t
			}
			return dazInto(x, f64View(tmp[:2*len(x)]))
		}
		switch g.kinds[j] {
		case fuseSignBit:
			k := signBitF64Vector(m.Opcode == "abs", arg(0), dst)
			x, d := f64Bits(arg(0)[k:]), f64Bits(dst[k:])
			x = x[:len(d)]
			if m.Opcode == "abs" {
				for i, v := range x {
					d[i] = v &^ (1 << 63)
				}
			} else {
				for i, v := range x {
					d[i] = v ^ (1 << 63)
				}
			}
		case fuseUnary:
			x := arg(0)
			keep := keepsSubnormals64(m.Opcode)
			if !keep {
				x = daz(0, w.tmp[0])
			}
			unaryFloat(m.Opcode, x, dst)
			if !keep {
				ftz(dst)
			}
		case fuseBinary:
			a, b := daz(0, w.tmp[0]), daz(1, w.tmp[1])
			k := binaryFTZF64Vector(m.Opcode, a, b, dst) // computed and flushed
			binaryFloat(m.Opcode, a[k:], b[k:], dst[k:])
			ftz(dst[k:])
		case fuseFMA:
			// As evalFMA: one rounding, operands and result as they are
			// (no flushing).
			a, b, c := arg(0), arg(1), arg(2)
			for i := fmaF64Vector(a, b, c, dst); i < len(dst); i++ {
				dst[i] = math.FMA(a[i], b[i], c[i])
			}
		case fuseBroadcast, fuseSlice:
			src := f64Bits(arg(0))
			if g.splat[j] {
				if !w.filled[j] {
					fillRepeat(f64Bits(f64View(w.bufs[j])), src[g.boffs[j]])
					w.filled[j] = true
				}
				break
			}
			broadcastInto(w.idx, g.dims, g.bstrides[j], g.boffs[j], src, s, f64Bits(dst))
		case fuseCompare:
			a, b := daz(0, w.tmp[0]), daz(1, w.tmp[1])
			pb := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), l)
			compareKernel(m.ComparisonDirection, a, b, pb)
		case fusePred:
			pa := func(k int) []byte {
				if ext.predArgs != nil && ext.predArgs[j] != nil && ext.predArgs[j][k] != nil {
					return ext.predArgs[j][k][s:e]
				}
				return predBlock(w.bufs[g.opPos[j][k]][:l])
			}
			pd := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), l)
			if m.Opcode == "compare" {
				compareKernel(m.ComparisonDirection, pa(0), pa(1), pd)
				break
			}
			if m.Opcode == "not" {
				predNot(pa(0), pd)
				break
			}
			predLogic(m.Opcode, pa(0), pa(1), pd)
		case fuseSelect:
			p := ext.pred[j]
			if p != nil {
				p = p[s:e]
			} else {
				p = predBlock(w.bufs[g.opPos[j][0]][:l])
			}
			selectBits64(p, f64Bits(arg(1)), f64Bits(arg(2)), f64Bits(dst))
		default:
			panic(fmt.Sprintf("f64 group member %s of kind %d", m.Name, g.kinds[j]))
		}
		if g.flushed[j] {
			w.states[j] = blockClean
		}
		if ext.out != nil && ext.out[j] != nil {
			copy(f64View(ext.out[j])[s:e], dst)
		}
	}
}

// selectBits64 is selectBits for 64-bit elements.
func selectBits64(p []byte, a, b, o []uint64) {
	p, a, b = p[:len(o)], a[:len(o)], b[:len(o)]
	for i := range o {
		m := uint64(0)
		if p[i] != 0 {
			m = ^uint64(0)
		}
		o[i] = b[i] ^ (a[i]^b[i])&m
	}
}
