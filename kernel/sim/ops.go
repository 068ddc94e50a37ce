package sim

import (
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/tensor"
)

func init() {
	opTable = map[string]opSpec{
		"alloc":                   {1, 1, 0, 0, false, prepNone, runAlloc},
		"memset":                  {1, 1, 0, 0, false, prepMemset, runMemset},
		"iota":                    {1, 1, 0, 0, false, prepIota, runIota},
		"dma":                     {1, 1, 1, 1, false, prepDMA, runDMA},
		"dma_transpose":           {1, 1, 1, 1, false, prepTranspose, runTranspose},
		"tensor_copy":             {1, 1, 1, 1, false, prepCopy, runCopy},
		"activation":              {1, 2, 1, 3, false, prepActivation, runActivation},
		"tensor_tensor":           {1, 1, 2, 2, false, prepTensorTensor, runTensorTensor},
		"tensor_scalar":           {1, 1, 1, 3, false, prepTensorScalar, runTensorScalar},
		"scalar_tensor_tensor":    {1, 1, 2, 3, false, prepSTT, runSTT},
		"tensor_reduce":           {1, 1, 1, 1, true, prepReduce, runReduce},
		"tensor_partition_reduce": {1, 1, 1, 1, true, prepPartitionReduce, runPartitionReduce},
		"tensor_scalar_reduce":    {2, 2, 1, 2, false, prepTSR, runTSR},
		"tensor_tensor_scan":      {1, 1, 2, 3, false, prepScan, runScan},
		"matmul":                  {1, 1, 2, 2, false, prepMatmul, runMatmul},
		"transpose":               {1, 1, 1, 1, false, prepTranspose, runTranspose},
		"select":                  {1, 1, 1, 3, false, prepSelect, runSelect},
		"affine_select":           {1, 1, 1, 1, false, prepAffineSelect, runAffineSelect},
		"copy_predicated":         {1, 1, 1, 2, false, prepCopyPred, runCopyPred},
		"atomic_rmw":              {1, 1, 1, 1, false, prepAtomic, runAtomic},
		"all_reduce":              {1, 1, 1, 1, false, prepAllReduce, runAllReduce},
		"print":                   {0, 0, 1, 1, true, prepNone, runPrint},
		// prepared by prepDeviceCollective (compile.go), which numbers them
		"cc_all_reduce":         {1, 1, 1, 1, false, prepNone, runDeviceCollective},
		"cc_all_gather":         {1, 1, 1, 1, false, prepNone, runDeviceCollective},
		"cc_reduce_scatter":     {1, 1, 1, 1, false, prepNone, runDeviceCollective},
		"cc_all_to_all":         {1, 1, 1, 1, false, prepNone, runDeviceCollective},
		"cc_collective_permute": {1, 1, 1, 1, false, prepNone, runDeviceCollective},
	}
	registerMoreOps()
}

func prepNone(ci *cinst) error { return nil }

// sameCount requires the source to broadcast to the domain.
func checkBroadcast(ci *cinst, k int, dom []int) error {
	if !broadcastsTo(ci.src[k].shape, dom) {
		return fmt.Errorf("src[%d] tile %v does not broadcast to the domain %v", k, ci.src[k].shape, dom)
	}
	return nil
}

// ---- alloc / memset / iota ------------------------------------------------

func runAlloc(in *instance, ci *cinst) error {
	id := ci.dst[0].tensor
	st := in.stores[id]
	t := ci.dst[0].t
	if st.f32 != nil {
		fillF32(st.f32, float32(math.NaN()))
		return nil
	}
	if st.mem == nil {
		fillF64(st.vals, sentinel(st.dt))
		return nil
	}
	// physical: the tensor's current placement, every element
	a := &cacc{tensor: id, t: t, dt: st.dt, tstr: tensor.Strides(t.Shape)}
	for _, d := range t.Shape {
		a.shape = append(a.shape, int(d))
	}
	a.n = prod(a.shape)
	for d := range t.Shape {
		co := make([]int64, len(t.Shape))
		co[d] = 1
		a.idx = append(a.idx, caff{tile: co})
	}
	v, err := in.resolve(ci, a, nil, false)
	if err != nil {
		return err
	}
	vals := make([]float64, a.n)
	s := sentinel(st.dt)
	for i := range vals {
		vals[i] = s
	}
	in.scatter(v, vals, nil)
	return nil
}

type memsetAux struct{ value float64 }

func prepMemset(ci *cinst) error {
	v, err := ci.flt("value", 0)
	if err != nil {
		return err
	}
	ci.aux = memsetAux{v}
	return nil
}

func runMemset(in *instance, ci *cinst) error {
	d := ci.dst[0]
	v := ci.aux.(memsetAux).value
	if len(ci.mask) == 0 && len(d.dyn) == 0 {
		// a contiguous private tile: fill the storage with the rounded value
		dv, err := in.resolve(ci, d, nil, ci.skipOOB())
		if err != nil {
			return err
		}
		if f32 := contiguousF32(dv, d.shape); f32 || contiguous(dv, d.shape) {
			x := []float64{v}
			if d.t.Tf32 {
				roundSlice(d.dt, x)
				roundTF32(x)
			}
			roundSlice(dv.st.dt, x)
			if f32 {
				fillF32(dv.st.f32[dv.base:dv.base+d.n], float32(x[0]))
			} else {
				fillF64(dv.st.vals[dv.base:dv.base+d.n], x[0])
			}
			return nil
		}
	}
	buf := in.buf.get(0, d.n)
	for i := range buf {
		buf[i] = v
	}
	return in.writeDst(ci, buf)
}

func prepIota(ci *cinst) error {
	if len(ci.exprs) != 1 {
		return fmt.Errorf("iota needs its value expression in exprs[0] (has %d)", len(ci.exprs))
	}
	return nil
}

// runIota evaluates exprs[0] over the dst tile in int32 arithmetic (wrapping)
// and converts to the dst dtype.
func runIota(in *instance, ci *cinst) error {
	d := ci.dst[0]
	e := &ci.exprs[0]
	buf := in.buf.get(0, d.n)
	c := e.outer(in)
	idx := make([]int, len(d.shape))
	val := c
	for i := range buf {
		buf[i] = float64(int32(val))
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			val += e.tile[k]
			if idx[k] < d.shape[k] {
				break
			}
			val -= e.tile[k] * int64(d.shape[k])
			idx[k] = 0
		}
	}
	return in.writeDst(ci, buf)
}

// ---- dma / copies ---------------------------------------------------------

type dmaAux struct {
	rmw   *binop
	bcast bool // src broadcasts to dst (else same element count, row-major)
}

func prepDMA(ci *cinst) error {
	s, err := ci.str("dst_rmw_op", "")
	if err != nil {
		return err
	}
	aux := dmaAux{}
	if s != "" && s != "none" && s != "bypass" {
		if aux.rmw, err = lookupBinop(s); err != nil {
			return err
		}
	}
	if m, err := ci.str("oob_mode", "error"); err != nil || (m != "error" && m != "skip") {
		return fmt.Errorf("oob_mode must be \"error\" or \"skip\", got %q", m)
	}
	src, dst := ci.src[0], ci.dst[0]
	switch {
	case broadcastsTo(src.shape, dst.shape):
		aux.bcast = true
	case src.n == dst.n:
	default:
		return fmt.Errorf("src tile %v (%d elements) does not match dst tile %v (%d elements)", src.shape, src.n, dst.shape, dst.n)
	}
	ci.aux = aux
	return nil
}

// convertVals applies the copy conversion: same dtype is bit-exact; a change
// of dtype goes through float32 (then rounds to the destination).
func convertVals(from, to dtype.Type, vals []float64) {
	if from == to {
		return
	}
	for i, x := range vals {
		vals[i] = float64(float32(x))
	}
}

func runDMA(in *instance, ci *cinst) error {
	aux := ci.aux.(dmaAux)
	src, dst := ci.src[0], ci.dst[0]
	dom := dst.shape
	same := src.dt == dst.dt && src.t.Tf32 == dst.t.Tf32
	if aux.rmw == nil && len(ci.mask) == 0 && aux.bcast {
		// whole-tile copy: storage to storage when both are contiguous
		xv, err := in.resolve(ci, src, nil, ci.skipOOB())
		if err != nil {
			return err
		}
		if same && xv.offs == nil {
			// one strided pass from source storage to destination storage
			dv, err := in.resolve(ci, dst, nil, ci.skipOOB())
			if err != nil {
				return err
			}
			if !(dv.st == xv.st && dv.base != xv.base) && transfer(dv, xv, dom) {
				return nil
			}
		}
		if xv.offs == nil {
			d, err := in.dst(ci, xv)
			if err != nil {
				return err
			}
			if contiguous(xv, dom) {
				x := xv.st.vals[xv.base : xv.base+prod(dom)]
				if same && !d.direct {
					// e.g. a store into an f32 output: convert on the way
					dv, err := in.resolve(ci, dst, nil, ci.skipOOB())
					if err != nil {
						return err
					}
					in.scatterExact(dv, x, nil)
					return nil
				}
				if same {
					copy(d.out, x)
				} else {
					for i, v := range x {
						d.out[i] = float64(float32(v))
					}
				}
			} else {
				in.gather(xv, dom, d.out)
				if !same {
					for i, v := range d.out {
						d.out[i] = float64(float32(v))
					}
				}
			}
			return in.commit(ci, d, same || (dst.dt == dtype.F32 && !dst.t.Tf32))
		}
	}
	var buf []float64
	var sv view
	var err error
	if aux.bcast {
		buf, sv, err = in.srcDom(ci, 0, dom, 0)
	} else {
		sv, err = in.resolve(ci, src, nil, ci.skipOOB())
		if err == nil {
			buf = in.buf.get(0, src.n)
			in.gather(sv, src.shape, buf)
		}
	}
	if err != nil {
		return err
	}
	var keep []bool
	if sv.offs != nil {
		keep = validMask(sv, dom, aux.bcast)
	}
	convertVals(src.dt, dst.dt, buf)
	if aux.rmw != nil {
		dv, err := in.resolve(ci, dst, &maskCtx{preds: ci.mask, axisMap: identityMap(len(dom))}, ci.skipOOB())
		if err != nil {
			return err
		}
		cur := in.buf.get(1, dst.n)
		in.gather(dv, dom, cur)
		aux.rmw.vec(buf, cur, buf)
		same = false
	}
	return in.writeAccX(ci, dst, identityMap(len(dom)), buf, keep, same)
}

// validMask marks the domain elements whose source element was not skipped.
func validMask(v view, dom []int, bcast bool) []bool {
	n := prod(dom)
	keep := make([]bool, n)
	if !bcast {
		for i, o := range v.offs {
			keep[i] = o >= 0
		}
		return keep
	}
	ts := bcastStrides(v.shape, rowStrides(v.shape), dom)
	rows(dom, [][]int{ts}, []int{0}, func(o, inner []int, cnt, pos int) {
		t := o[0]
		for j := 0; j < cnt; j++ {
			keep[pos+j] = v.offs[t] >= 0
			t += inner[0]
		}
	})
	return keep
}

func prepCopy(ci *cinst) error {
	return checkBroadcast(ci, 0, ci.dst[0].shape)
}

func runCopy(in *instance, ci *cinst) error {
	dom := ci.dst[0].shape
	same := ci.src[0].dt == ci.dst[0].dt && ci.src[0].t.Tf32 == ci.dst[0].t.Tf32
	if len(ci.mask) == 0 && len(ci.src[0].dyn) == 0 {
		// a float32 tile (PSUM) copied whole into contiguous storage: one
		// pass from the source's float32 values, then the dst rounding
		xv, err := in.resolve(ci, ci.src[0], nil, ci.skipOOB())
		if err != nil {
			return err
		}
		if contiguousF32(xv, dom) {
			d, err := in.dst(ci, xv)
			if err != nil {
				return err
			}
			if d.direct {
				src := xv.st.f32[xv.base : xv.base+len(d.out)]
				if !same && d.v.st.dt == dtype.BF16 && !ci.dst[0].t.Tf32 {
					roundF32ToBF16(d.out, src) // the rounding commit would do, fused
					return nil
				}
				for i, x := range src {
					d.out[i] = float64(x)
				}
				return in.commit(ci, d, same || f32Exact(ci))
			}
		}
	}
	x, xv, err := in.operand(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	d, err := in.dst(ci, xv)
	if err != nil {
		return err
	}
	switch {
	case x.full != nil:
		if same {
			copy(d.out, x.full)
		} else {
			for i, v := range x.full {
				d.out[i] = float64(float32(v))
			}
		}
	default:
		binops["bypass"].apply(d.out, x, scalarOpnd(0), dom[len(dom)-1])
		if same {
			// bypass went through float32; redo exactly for wide integers
			n := dom[len(dom)-1]
			for r, v := range x.row {
				for j := 0; j < n; j++ {
					d.out[r*n+j] = v
				}
			}
		}
	}
	return in.commit(ci, d, same || f32Exact(ci))
}

// transpose / dma_transpose: dst (a, b) = src (b, a) over 2-D tiles.
func prepTranspose(ci *cinst) error {
	s, d := ci.src[0].shape, ci.dst[0].shape
	if ci.op == "transpose" && len(s) > 2 && len(d) == 2 && d[1] == s[0] && d[0] == prod(s[1:]) {
		return nil // free axes flattened, as nc_transpose does
	}
	if len(s) != 2 || len(d) != 2 || s[0] != d[1] || s[1] != d[0] {
		return fmt.Errorf("transposes 2-D tiles: src %v, dst %v must be (a,b) and (b,a)", s, d)
	}
	return nil
}

func runTranspose(in *instance, ci *cinst) error {
	src := ci.src[0]
	v, err := in.resolve(ci, src, nil, false)
	if err != nil {
		return err
	}
	dom := ci.dst[0].shape
	buf := in.buf.get(0, prod(dom))
	if v.offs != nil || len(src.shape) > 2 {
		tmp := make([]float64, src.n)
		in.gather(v, src.shape, tmp)
		for i := 0; i < dom[0]; i++ {
			for j := 0; j < dom[1]; j++ {
				buf[i*dom[1]+j] = tmp[j*dom[0]+i]
			}
		}
	} else {
		tv := v
		tv.shape = []int{src.shape[1], src.shape[0]}
		tv.str = []int{v.str[1], v.str[0]}
		in.gather(tv, dom, buf)
	}
	if ci.op == "transpose" {
		convertVals(src.dt, ci.dst[0].dt, buf)
	}
	return in.writeDst(ci, buf)
}

// ---- activation ---------------------------------------------------------

type actAux struct {
	fn              string
	scale           float64
	hasBias, hasScl bool
	reduce          *binop
	regs            regCmd
}

func prepActivation(ci *cinst) error {
	var a actAux
	var err error
	if a.fn, err = ci.str("func", "identity"); err != nil {
		return err
	}
	if _, ok := unaries[a.fn]; !ok && a.fn != "invert" {
		return fmt.Errorf("unknown activation function %q", a.fn)
	}
	if a.scale, err = ci.flt("scale", 1); err != nil {
		return err
	}
	if a.hasBias, err = ci.boolean("has_bias", len(ci.src) >= 2); err != nil {
		return err
	}
	if a.hasScl, err = ci.boolean("has_scale", len(ci.src) >= 3); err != nil {
		return err
	}
	want := 1
	if a.hasBias {
		want++
	}
	if a.hasScl {
		want++
	}
	if want != len(ci.src) {
		return fmt.Errorf("has_bias=%v has_scale=%v needs %d sources, has %d", a.hasBias, a.hasScl, want, len(ci.src))
	}
	dom := ci.dst[0].shape
	for k := range ci.src {
		if err := checkBroadcast(ci, k, dom); err != nil {
			return err
		}
	}
	if a.regs, err = prepRegCmd(ci, "scalar"); err != nil {
		return err
	}
	r, err := ci.str("reduce_op", "")
	if err != nil {
		return err
	}
	if r != "" && r != "none" {
		if len(ci.dst) != 2 && !a.regs.stateful() {
			return fmt.Errorf("reduce_op %q needs the reduce result as dst[1]", r)
		}
		if a.reduce, err = lookupBinop(r); err != nil {
			return err
		}
	} else if len(ci.dst) == 2 && !a.regs.stateful() {
		return fmt.Errorf("dst[1] given without reduce_op")
	}
	if len(ci.dst) == 2 {
		if err := checkRowResult(ci.dst[1], dom); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

// checkRowResult requires a per-partition result tile: dom[0] elements.
func checkRowResult(a *cacc, dom []int) error {
	if a.n != dom[0] || a.shape[0] != dom[0] {
		return fmt.Errorf("reduce result tile %v must hold one value per partition (%d)", a.shape, dom[0])
	}
	return nil
}

func runActivation(in *instance, ci *cinst) error {
	a := ci.aux.(actAux)
	dom := ci.dst[0].shape
	n := dom[len(dom)-1]
	x, xv, err := in.operand(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	views := []view{xv}
	k := 1
	bias := scalarOpnd(0)
	if a.hasBias {
		var v view
		if bias, v, err = in.operand(ci, k, dom, 1); err != nil {
			return err
		}
		views = append(views, v)
		k++
	}
	scale := scalarOpnd(a.scale)
	if a.hasScl {
		var v view
		if scale, v, err = in.operand(ci, k, dom, 2); err != nil {
			return err
		}
		views = append(views, v)
	}
	d, err := in.dst(ci, views...)
	if err != nil {
		return err
	}
	out := d.out
	if !activationFused(a.fn, out, x, bias, scale, n) {
		binops["multiply"].apply(out, x, scale, n)
		if a.hasBias {
			binops["add"].apply(out, fullOpnd(out), bias, n)
		}
		if err := applyUnary(a.fn, out, out); err != nil {
			return ci.errf("invalid", "%v", err)
		}
	}
	if a.reduce != nil || a.regs.stateful() {
		var r []float64
		if a.reduce != nil {
			r = reduceRows(a.reduce, out, dom[0], len(out)/dom[0], in.domMask(ci, dom))
		}
		if r, err = in.applyRegs(a.regs, a.reduce, r, dom[0]); err != nil {
			return ci.errf("invalid", "%v", err)
		}
		if len(ci.dst) == 2 {
			if err := in.writeAcc(ci, ci.dst[1], rowMap(len(ci.dst[1].shape)), r, nil); err != nil {
				return err
			}
		}
	}
	return in.commit(ci, d, f32Exact(ci) && a.fn != "invert")
}

// activationFused computes f(x*scale + bias) in one pass for the common
// case of a full x, per-row (or scalar) bias and scalar scale.
func activationFused(fn string, out []float64, x, bias, scale opnd, n int) bool {
	if x.full == nil || !scale.isScalar || bias.full != nil {
		return false
	}
	var f func(float64) float64
	switch fn {
	case "exp":
		f = expF32
	case "identity", "copy", "bypass":
		f = nil
	default:
		return false
	}
	s := float32(scale.scalar)
	rowsN := len(out) / n
	for r := 0; r < rowsN; r++ {
		b := float32(bias.scalar)
		if bias.row != nil {
			b = float32(bias.row[r])
		}
		xs := x.full[r*n : (r+1)*n]
		os := out[r*n : (r+1)*n]
		if f == nil {
			for j, v := range xs {
				os[j] = float64(float32(v)*s + b)
			}
			continue
		}
		j0 := 0
		if fn == "exp" {
			j0 = expRowVec(os, xs, float64(s), float64(b))
		}
		if s == 1 {
			for j := j0; j < len(xs); j++ {
				os[j] = float64(float32(f(float64(float32(xs[j]) + b))))
			}
			continue
		}
		for j := j0; j < len(xs); j++ {
			v := xs[j]
			os[j] = float64(float32(f(float64(float32(v)*s + b))))
		}
	}
	return true
}

// reduceRows reduces each of `rows` consecutive runs of length n (only kept
// elements when keep != nil).
func reduceRows(op *binop, x []float64, nrows, n int, keep []bool) []float64 {
	out := make([]float64, nrows)
	var tmp []float64
	for r := 0; r < nrows; r++ {
		row := x[r*n : (r+1)*n]
		if keep != nil {
			tmp = tmp[:0]
			for j, v := range row {
				if keep[r*n+j] {
					tmp = append(tmp, v)
				}
			}
			row = tmp
		}
		out[r] = op.reduceRow(row)
	}
	return out
}

// ---- tensor_tensor / tensor_scalar / scalar_tensor_tensor ----------------

func prepTensorTensor(ci *cinst) error {
	s, err := ci.str("op", "")
	if err != nil {
		return err
	}
	op, err := lookupBinop(s)
	if err != nil {
		return err
	}
	for k := range ci.src {
		if err := checkBroadcast(ci, k, ci.dst[0].shape); err != nil {
			return err
		}
	}
	ci.aux = op
	return nil
}

func runTensorTensor(in *instance, ci *cinst) error {
	dom := ci.dst[0].shape
	a, av, err := in.operand(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	b, bv, err := in.operand(ci, 1, dom, 1)
	if err != nil {
		return err
	}
	d, err := in.dst(ci, av, bv)
	if err != nil {
		return err
	}
	op := ci.aux.(*binop)
	op.apply(d.out, a, b, dom[len(dom)-1])
	return in.commit(ci, d, f32Exact(ci) && !op.intOp)
}

// operand is a scalar immediate or a source tile.
type operand struct {
	op     *binop
	tile   int // src index, -1: immediate
	scalar float64
	rev    bool
}

// parseOperand reads op<i>, scalar<i>, has_operand<i>_tile, reverse<i>;
// next is the next unused source index.
func parseOperand(ci *cinst, i int, next *int, required bool) (*operand, error) {
	name, err := ci.str(fmt.Sprintf("op%d", i), "")
	if err != nil {
		return nil, err
	}
	if name == "" || name == "none" {
		if required {
			return nil, fmt.Errorf("op%d is required", i)
		}
		return nil, nil
	}
	o := &operand{tile: -1}
	if o.op, err = lookupBinop(name); err != nil {
		return nil, err
	}
	_, hasScalar := ci.attr(fmt.Sprintf("scalar%d", i))
	hasTile, err := ci.boolean(fmt.Sprintf("has_operand%d_tile", i), !hasScalar && *next < len(ci.src))
	if err != nil {
		return nil, err
	}
	if hasTile {
		if *next >= len(ci.src) {
			return nil, fmt.Errorf("operand%d tile is missing", i)
		}
		o.tile = *next
		*next++
		if err := checkBroadcast(ci, o.tile, ci.dst[0].shape); err != nil {
			return nil, err
		}
	} else if o.scalar, err = ci.flt(fmt.Sprintf("scalar%d", i), 0); err != nil {
		return nil, err
	}
	if o.rev, err = ci.boolean(fmt.Sprintf("reverse%d", i), false); err != nil {
		return nil, err
	}
	return o, nil
}

func (in *instance) operandOf(ci *cinst, o *operand, dom []int, slot int) (opnd, view, error) {
	if o.tile < 0 {
		return scalarOpnd(o.scalar), view{}, nil
	}
	return in.operand(ci, o.tile, dom, slot)
}

// applyOperand computes out = x op o (o op x when reversed).
func applyOperand(o *operand, out []float64, x, y opnd, n int) {
	if o.rev {
		o.op.apply(out, y, x, n)
	} else {
		o.op.apply(out, x, y, n)
	}
}

type tsAux struct{ o0, o1 *operand }

func prepTensorScalar(ci *cinst) error {
	next := 1
	o0, err := parseOperand(ci, 0, &next, true)
	if err != nil {
		return err
	}
	o1, err := parseOperand(ci, 1, &next, false)
	if err != nil {
		return err
	}
	if next != len(ci.src) {
		return fmt.Errorf("%d sources but the operands use %d", len(ci.src), next)
	}
	if err := checkBroadcast(ci, 0, ci.dst[0].shape); err != nil {
		return err
	}
	ci.aux = tsAux{o0, o1}
	return nil
}

func runTensorScalar(in *instance, ci *cinst) error {
	a := ci.aux.(tsAux)
	dom := ci.dst[0].shape
	n := dom[len(dom)-1]
	x, xv, err := in.operand(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	y0, v0, err := in.operandOf(ci, a.o0, dom, 1)
	if err != nil {
		return err
	}
	views := []view{xv, v0}
	var y1 opnd
	if a.o1 != nil {
		var v1 view
		if y1, v1, err = in.operandOf(ci, a.o1, dom, 2); err != nil {
			return err
		}
		views = append(views, v1)
	}
	d, err := in.dst(ci, views...)
	if err != nil {
		return err
	}
	applyOperand(a.o0, d.out, x, y0, n)
	exact := f32Exact(ci) && !a.o0.op.intOp
	if a.o1 != nil {
		applyOperand(a.o1, d.out, fullOpnd(d.out), y1, n)
		exact = exact && !a.o1.op.intOp
	}
	return in.commit(ci, d, exact)
}

type sttAux struct {
	o0    *operand
	op1   *binop
	rev1  bool
	data1 int
}

func prepSTT(ci *cinst) error {
	next := 1
	o0, err := parseOperand(ci, 0, &next, true)
	if err != nil {
		return err
	}
	if o0.tile >= 0 && len(ci.src) == 2 {
		// with two sources the second is data1: operand0 must be an immediate
		return fmt.Errorf("scalar_tensor_tensor with 2 sources takes operand0 as scalar0")
	}
	s1, err := ci.str("op1", "")
	if err != nil {
		return err
	}
	a := sttAux{o0: o0, data1: next}
	if a.op1, err = lookupBinop(s1); err != nil {
		return err
	}
	if a.rev1, err = ci.boolean("reverse1", false); err != nil {
		return err
	}
	if next != len(ci.src)-1 {
		return fmt.Errorf("%d sources: want data, operand0 (if a tile) and data1", len(ci.src))
	}
	for k := range ci.src {
		if err := checkBroadcast(ci, k, ci.dst[0].shape); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

func runSTT(in *instance, ci *cinst) error {
	a := ci.aux.(sttAux)
	dom := ci.dst[0].shape
	n := dom[len(dom)-1]
	x, xv, err := in.operand(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	y0, v0, err := in.operandOf(ci, a.o0, dom, 1)
	if err != nil {
		return err
	}
	d1, v1, err := in.operand(ci, a.data1, dom, 2)
	if err != nil {
		return err
	}
	d, err := in.dst(ci, xv, v0, v1)
	if err != nil {
		return err
	}
	applyOperand(a.o0, d.out, x, y0, n)
	if a.rev1 {
		a.op1.apply(d.out, d1, fullOpnd(d.out), n)
	} else {
		a.op1.apply(d.out, fullOpnd(d.out), d1, n)
	}
	return in.commit(ci, d, f32Exact(ci) && !a.o0.op.intOp && !a.op1.intOp)
}

// ---- reductions ------------------------------------------------------------

type reduceAux struct {
	op     *binop
	perm   []int // src axes: kept first, reduced last
	nKeep  int
	negate bool
}

func prepReduce(ci *cinst) error {
	s, err := ci.str("op", "")
	if err != nil {
		return err
	}
	a := reduceAux{}
	if a.op, err = lookupBinop(s); err != nil {
		return err
	}
	if a.negate, err = ci.boolean("negate", false); err != nil {
		return err
	}
	src := ci.src[0]
	r := len(src.shape)
	axes, ok, err := ci.ints("axes")
	if err != nil {
		return err
	}
	if !ok {
		for k := 1; k < r; k++ {
			axes = append(axes, int64(k))
		}
	}
	red := make([]bool, r)
	for _, ax := range axes {
		if ax < 1 || int(ax) >= r || red[ax] {
			return fmt.Errorf("reduce axes %v must be distinct free axes of the rank-%d source tile", axes, r)
		}
		red[ax] = true
	}
	outN := 1
	for k := 0; k < r; k++ {
		if !red[k] {
			a.perm = append(a.perm, k)
			outN *= src.shape[k]
		}
	}
	a.nKeep = len(a.perm)
	for k := 0; k < r; k++ {
		if red[k] {
			a.perm = append(a.perm, k)
		}
	}
	if ci.dst[0].n != outN || ci.dst[0].shape[0] != src.shape[0] {
		return fmt.Errorf("dst tile %v does not hold the reduction of %v over axes %v", ci.dst[0].shape, src.shape, axes)
	}
	ci.aux = a
	return nil
}

// reduceGeneric reduces the source over the axes perm[nKeep:], writing the
// kept axes' result to dst[0]; negate multiplies the result by -1.
func (in *instance) reduceGeneric(ci *cinst, op *binop, perm []int, nKeep int, negate bool) error {
	src := ci.src[0]
	keepMask := in.domMask(ci, src.shape)
	var mc *maskCtx
	if len(ci.mask) > 0 {
		mc = &maskCtx{preds: ci.mask, axisMap: identityMap(len(src.shape))}
	}
	v, err := in.resolve(ci, src, mc, false)
	if err != nil {
		return err
	}
	// permuted gather
	pshape := make([]int, len(perm))
	for i, k := range perm {
		pshape[i] = src.shape[k]
	}
	buf := in.buf.get(0, src.n)
	var pk []bool
	if keepMask == nil && isIdentityPerm(perm) && contiguous(v, src.shape) {
		buf = v.st.vals[v.base : v.base+src.n]
	} else if v.offs == nil {
		pv := v
		pv.shape = pshape
		pv.str = make([]int, len(perm))
		for i, k := range perm {
			pv.str[i] = v.str[k]
		}
		in.gather(pv, pshape, buf)
	} else {
		tmp := make([]float64, src.n)
		in.gather(v, src.shape, tmp)
		permute(tmp, src.shape, perm, buf)
	}
	if keepMask != nil {
		pk = make([]bool, src.n)
		permuteBool(keepMask, src.shape, perm, pk)
	}
	outN := 1
	for _, k := range perm[:nKeep] {
		outN *= src.shape[k]
	}
	inner := src.n / outN
	res := reduceRows(op, buf, outN, inner, pk)
	var wkeep []bool
	if pk != nil {
		wkeep = make([]bool, outN)
		for r := 0; r < outN; r++ {
			for j := 0; j < inner; j++ {
				if pk[r*inner+j] {
					wkeep[r] = true
					break
				}
			}
		}
	}
	if negate {
		for i := range res {
			res[i] = -res[i]
		}
	}
	d := ci.dst[0]
	var dmc *maskCtx
	if wkeep != nil {
		// masked-out rows may lie outside dst: only written rows must be in bounds
		dmc = &maskCtx{keep: wkeep}
	}
	dv, err := in.resolve(ci, d, dmc, false)
	if err != nil {
		return err
	}
	in.scatter(dv, res, wkeep)
	return nil
}

func permute(src []float64, shape []int, perm []int, dst []float64) {
	str := rowStrides(shape)
	ps := make([]int, len(perm))
	pshape := make([]int, len(perm))
	for i, k := range perm {
		ps[i] = str[k]
		pshape[i] = shape[k]
	}
	rows(pshape, [][]int{ps}, []int{0}, func(o, inner []int, n, pos int) {
		p := o[0]
		for j := 0; j < n; j++ {
			dst[pos+j] = src[p]
			p += inner[0]
		}
	})
}

func permuteBool(src []bool, shape []int, perm []int, dst []bool) {
	f := make([]float64, len(src))
	for i, b := range src {
		if b {
			f[i] = 1
		}
	}
	g := make([]float64, len(src))
	permute(f, shape, perm, g)
	for i := range dst {
		dst[i] = g[i] != 0
	}
}

func runReduce(in *instance, ci *cinst) error {
	a := ci.aux.(reduceAux)
	return in.reduceGeneric(ci, a.op, a.perm, a.nKeep, a.negate)
}

func prepPartitionReduce(ci *cinst) error {
	s, err := ci.str("op", "")
	if err != nil {
		return err
	}
	op, err := lookupBinop(s)
	if err != nil {
		return err
	}
	src := ci.src[0]
	a := reduceAux{op: op}
	for k := 1; k < len(src.shape); k++ {
		a.perm = append(a.perm, k)
	}
	a.nKeep = len(a.perm)
	a.perm = append(a.perm, 0)
	if ci.dst[0].n != src.n/src.shape[0] {
		return fmt.Errorf("dst tile %v does not hold the partition reduction of %v", ci.dst[0].shape, src.shape)
	}
	ci.aux = a
	return nil
}

func runPartitionReduce(in *instance, ci *cinst) error {
	a := ci.aux.(reduceAux)
	return in.reduceGeneric(ci, a.op, a.perm, a.nKeep, false)
}

// ---- tensor_scalar_reduce ----------------------------------------------------

type tsrAux struct {
	o0     *operand
	reduce *binop
}

func prepTSR(ci *cinst) error {
	next := 1
	o0, err := parseOperand(ci, 0, &next, true)
	if err != nil {
		return err
	}
	if next != len(ci.src) {
		return fmt.Errorf("%d sources but the operands use %d", len(ci.src), next)
	}
	r, err := ci.str("reduce_op", "")
	if err != nil {
		return err
	}
	a := tsrAux{o0: o0}
	if a.reduce, err = lookupBinop(r); err != nil {
		return err
	}
	if err := checkBroadcast(ci, 0, ci.dst[0].shape); err != nil {
		return err
	}
	if err := checkRowResult(ci.dst[1], ci.dst[0].shape); err != nil {
		return err
	}
	ci.aux = a
	return nil
}

func runTSR(in *instance, ci *cinst) error {
	a := ci.aux.(tsrAux)
	dom := ci.dst[0].shape
	n := dom[len(dom)-1]
	x, xv, err := in.operand(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	y0, v0, err := in.operandOf(ci, a.o0, dom, 1)
	if err != nil {
		return err
	}
	d, err := in.dst(ci, xv, v0)
	if err != nil {
		return err
	}
	applyOperand(a.o0, d.out, x, y0, n)
	keep := in.domMask(ci, dom)
	r := reduceRows(a.reduce, d.out, dom[0], len(d.out)/dom[0], keep)
	if err := in.writeAcc(ci, ci.dst[1], rowMap(len(ci.dst[1].shape)), r, nil); err != nil {
		return err
	}
	return in.commit(ci, d, f32Exact(ci) && !a.o0.op.intOp)
}

func rowMap(r int) []int {
	m := make([]int, r)
	for i := range m {
		m[i] = -1
	}
	m[0] = 0
	return m
}

// ---- tensor_tensor_scan -------------------------------------------------------

type scanAux struct {
	op0, op1   *binop
	rev0, rev1 bool
	initTile   bool
	initial    float64
}

func prepScan(ci *cinst) error {
	var a scanAux
	s0, err := ci.str("op0", "")
	if err != nil {
		return err
	}
	s1, err := ci.str("op1", "")
	if err != nil {
		return err
	}
	if a.op0, err = lookupBinop(s0); err != nil {
		return err
	}
	if a.op1, err = lookupBinop(s1); err != nil {
		return err
	}
	if a.rev0, err = ci.boolean("reverse0", false); err != nil {
		return err
	}
	if a.rev1, err = ci.boolean("reverse1", false); err != nil {
		return err
	}
	a.initTile = len(ci.src) == 3
	if a.initial, err = ci.flt("initial", 0); err != nil {
		return err
	}
	dom := ci.dst[0].shape
	for k := range ci.src {
		if err := checkBroadcast(ci, k, dom); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

func runScan(in *instance, ci *cinst) error {
	a := ci.aux.(scanAux)
	dom := ci.dst[0].shape
	d0, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	d1, _, err := in.srcDom(ci, 1, dom, 1)
	if err != nil {
		return err
	}
	n := dom[len(dom)-1]
	rowsN := len(d0) / n
	var init []float64
	if a.initTile {
		// one initial value per scanned row
		rdom := append(append([]int{}, dom[:len(dom)-1]...), 1)
		init, _, err = in.srcDom(ci, 2, rdom, 2)
		if err != nil {
			return err
		}
	}
	out := in.buf.get(3, len(d0))
	for r := 0; r < rowsN; r++ {
		prev := a.initial
		if init != nil {
			prev = init[r]
		}
		prev = float64(float32(prev))
		for j := 0; j < n; j++ {
			i := r*n + j
			var t float64
			if a.rev0 {
				t = a.op0.scalar(prev, d0[i])
			} else {
				t = a.op0.scalar(d0[i], prev)
			}
			if a.rev1 {
				prev = a.op1.scalar(d1[i], t)
			} else {
				prev = a.op1.scalar(t, d1[i])
			}
			out[i] = prev
		}
	}
	return in.writeDst(ci, out)
}

// ---- matmul -------------------------------------------------------------------

type mmAux struct {
	accumulate bool
	k, m, n    int
}

func prepMatmul(ci *cinst) error {
	st, mv, d := ci.src[0].shape, ci.src[1].shape, ci.dst[0].shape
	if len(st) != 2 || len(mv) != 2 || len(d) != 2 {
		return fmt.Errorf("matmul takes 2-D tiles: stationary %v, moving %v, result %v", st, mv, d)
	}
	if st[0] != mv[0] || d[0] != st[1] || d[1] != mv[1] {
		return fmt.Errorf("stationary (K,M)=%v and moving (K,N)=%v need a result (M,N), got %v", st, mv, d)
	}
	acc, err := ci.boolean("accumulate", false)
	if err != nil {
		return err
	}
	ci.aux = mmAux{accumulate: acc, k: st[0], m: st[1], n: mv[1]}
	return nil
}

func (s *scratch) f32(i, n int) []float32 {
	if cap(s.g[i]) < n {
		s.g[i] = make([]float32, n)
	}
	return s.g[i][:n]
}

func toF32(dst []float32, src []float64) {
	src = src[:len(dst)]
	for i, x := range src {
		dst[i] = float32(x)
	}
}

// gemmPar: the goroutines one matmul may use. A product big enough to
// split runs on all of the run's goroutines when nothing else runs beside
// it (no loop fanned out around it, instances in order); the GEMM computes
// each result element the same way whatever the split.
func (in *instance) gemmPar(a mmAux) int {
	r := in.r
	if r.par <= 1 || in.nested || r.instancesParallel || r.p.hasCollectives || a.m*a.n*a.k < 1<<20 {
		return 1
	}
	return r.par
}

func runMatmul(in *instance, ci *cinst) error {
	a := ci.aux.(mmAux)
	sv, err := in.resolve(ci, ci.src[0], nil, false)
	if err != nil {
		return err
	}
	mv, err := in.resolve(ci, ci.src[1], nil, false)
	if err != nil {
		return err
	}
	// stationary (K,M) is read transposed as A (M,K), moving (K,N) as B.
	var sf, mf []float32
	ars, acs, brs, bcs := a.k, 1, a.n, 1
	// The stationary tile is copied transposed (A row-major, which every
	// GEMM backend takes fastest); the moving tile is read in place when
	// its storage is float32.
	if sv.offs == nil && sv.st.f32 != nil {
		// float32 storage: the GEMM reads the stationary tile in place as
		// the transposed A (A[i,p] = stationary[p,i]); its packing copies
		// columns of a transposed A as fast as rows of a row-major one.
		sf, ars, acs = sv.st.f32[sv.base:], sv.str[1], sv.str[0]
	} else if sv.offs == nil {
		sf = in.buf.f32(0, a.k*a.m)
		tv := sv
		tv.shape = []int{a.m, a.k}
		tv.str = []int{sv.str[1], sv.str[0]}
		in.gatherF32(tv, tv.shape, sf)
	} else {
		sf = in.buf.f32(0, a.k*a.m)
		tmp := make([]float64, a.k*a.m)
		in.gather(sv, ci.src[0].shape, tmp)
		st := make([]float64, a.k*a.m)
		permute(tmp, ci.src[0].shape, []int{1, 0}, st)
		toF32(sf, st)
	}
	if mv.offs == nil && mv.st.f32 != nil {
		mf, brs, bcs = mv.st.f32[mv.base:], mv.str[0], mv.str[1]
	} else {
		mf = in.buf.f32(1, a.k*a.n)
		in.gatherF32(mv, ci.src[1].shape, mf)
	}
	d := ci.dst[0]
	cf := in.buf.f32(2, a.m*a.n)
	var dmc *maskCtx
	if len(ci.mask) > 0 {
		dmc = &maskCtx{preds: ci.mask, axisMap: identityMap(2)}
	}
	dv, err := in.resolve(ci, d, dmc, false)
	if err != nil {
		return err
	}
	if len(ci.mask) == 0 && contiguousF32(dv, d.shape) {
		// accumulate straight into the PSUM tile's float32 storage
		c := dv.st.f32[dv.base : dv.base+d.n]
		eval.GemmF32(in.gemmPar(a), a.m, a.n, a.k, sf, ars, acs, mf, brs, bcs, c, a.accumulate)
		clearUpper()
		if d.dt != dtype.F32 {
			for i, x := range c {
				c[i] = float32(roundTo(d.dt, float64(x)))
			}
		}
		return nil
	}
	if a.accumulate {
		in.gatherF32(dv, d.shape, cf)
	}
	eval.GemmF32(in.gemmPar(a), a.m, a.n, a.k, sf, ars, acs, mf, brs, bcs, cf, a.accumulate)
	clearUpper()
	if len(ci.mask) == 0 && d.dt == dtype.F32 && contiguous(dv, d.shape) {
		out := dv.st.vals[dv.base : dv.base+d.n]
		for i, x := range cf {
			out[i] = float64(x)
		}
		return nil
	}
	res := in.buf.get(2, a.m*a.n)
	for i, x := range cf {
		res[i] = float64(x)
	}
	return in.writeAccX(ci, d, identityMap(2), res, nil, d.dt == dtype.F32)
}

// ---- select ---------------------------------------------------------------

type selAux struct {
	trueTile, falseTile int // src index or -1
	tv, fv              float64
}

func prepSelect(ci *cinst) error {
	a := selAux{trueTile: -1, falseTile: -1}
	next := 1
	_, tvSet := ci.attr("true_value")
	_, fvSet := ci.attr("false_value")
	ht, err := ci.boolean("has_true_tile", !tvSet)
	if err != nil {
		return err
	}
	hf, err := ci.boolean("has_false_tile", !fvSet)
	if err != nil {
		return err
	}
	if ht {
		a.trueTile = next
		next++
	} else if a.tv, err = ci.flt("true_value", 0); err != nil {
		return err
	}
	if hf {
		a.falseTile = next
		next++
	} else if a.fv, err = ci.flt("false_value", 0); err != nil {
		return err
	}
	if next != len(ci.src) {
		return fmt.Errorf("select has %d sources; pred plus %d tiles expected", len(ci.src), next-1)
	}
	for k := range ci.src {
		if err := checkBroadcast(ci, k, ci.dst[0].shape); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

func (in *instance) tileOrConst(ci *cinst, k int, c float64, dom []int, slot int) ([]float64, error) {
	if k >= 0 {
		b, _, err := in.srcDom(ci, k, dom, slot)
		return b, err
	}
	b := in.buf.get(slot, prod(dom))
	for i := range b {
		b[i] = c
	}
	return b, nil
}

func runSelect(in *instance, ci *cinst) error {
	a := ci.aux.(selAux)
	dom := ci.dst[0].shape
	p, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	t, err := in.tileOrConst(ci, a.trueTile, a.tv, dom, 1)
	if err != nil {
		return err
	}
	f, err := in.tileOrConst(ci, a.falseTile, a.fv, dom, 2)
	if err != nil {
		return err
	}
	for i := range f {
		if p[i] != 0 && !math.IsNaN(p[i]) {
			f[i] = t[i]
		}
	}
	convertIfNeeded(ci, f)
	return in.writeDst(ci, f)
}

// convertIfNeeded rounds engine results through float32 when the value
// sources' dtype differs from the destination's.
func convertIfNeeded(ci *cinst, vals []float64) {
	d := ci.dst[0].dt
	for _, s := range ci.src {
		if s.dt != d {
			for i, x := range vals {
				vals[i] = float64(float32(x))
			}
			return
		}
	}
}

type affSelAux struct{ fv float64 }

func prepAffineSelect(ci *cinst) error {
	fv, err := ci.flt("false_value", 0)
	if err != nil {
		return err
	}
	if len(ci.preds) == 0 {
		return fmt.Errorf("affine_select needs its predicate in preds")
	}
	if err := checkBroadcast(ci, 0, ci.dst[0].shape); err != nil {
		return err
	}
	ci.aux = affSelAux{fv}
	return nil
}

func runAffineSelect(in *instance, ci *cinst) error {
	dom := ci.dst[0].shape
	x, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	keep := make([]bool, len(x))
	tileMaskFor(in, &maskCtx{preds: ci.preds, axisMap: identityMap(len(dom))}, dom, keep)
	fv := ci.aux.(affSelAux).fv
	for i := range x {
		if !keep[i] {
			x[i] = fv
		}
	}
	convertIfNeeded(ci, x)
	return in.writeDst(ci, x)
}

type cpAux struct {
	dataTile bool
	value    float64
	reverse  bool
}

func prepCopyPred(ci *cinst) error {
	var a cpAux
	var err error
	a.dataTile = len(ci.src) == 2
	if !a.dataTile {
		if a.value, err = ci.flt("value", 0); err != nil {
			return err
		}
	}
	if a.reverse, err = ci.boolean("reverse_pred", false); err != nil {
		return err
	}
	for k := range ci.src {
		if err := checkBroadcast(ci, k, ci.dst[0].shape); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

func runCopyPred(in *instance, ci *cinst) error {
	a := ci.aux.(cpAux)
	dom := ci.dst[0].shape
	var data, pred []float64
	var err error
	if a.dataTile {
		if data, _, err = in.srcDom(ci, 0, dom, 0); err != nil {
			return err
		}
		if pred, _, err = in.srcDom(ci, 1, dom, 1); err != nil {
			return err
		}
	} else {
		if pred, _, err = in.srcDom(ci, 0, dom, 1); err != nil {
			return err
		}
		data = in.buf.get(0, len(pred))
		for i := range data {
			data[i] = a.value
		}
	}
	keep := make([]bool, len(pred))
	for i, p := range pred {
		keep[i] = (p != 0 && !math.IsNaN(p)) != a.reverse
	}
	if a.dataTile && ci.src[0].dt != ci.dst[0].dt {
		convertVals(ci.src[0].dt, ci.dst[0].dt, data)
	}
	return in.writeAcc(ci, ci.dst[0], identityMap(len(dom)), data, keep)
}

// ---- atomics, collectives, print -----------------------------------------------

func prepAtomic(ci *cinst) error {
	s, err := ci.str("op", "add")
	if err != nil {
		return err
	}
	op, err := lookupBinop(s)
	if err != nil {
		return err
	}
	ci.aux = op
	return checkBroadcast(ci, 0, ci.dst[0].shape)
}

func runAtomic(in *instance, ci *cinst) error {
	dom := ci.dst[0].shape
	x, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	d := ci.dst[0]
	in.r.atomMu.Lock()
	defer in.r.atomMu.Unlock()
	dv, err := in.resolve(ci, d, &maskCtx{preds: ci.mask, axisMap: identityMap(len(dom))}, ci.skipOOB())
	if err != nil {
		return err
	}
	cur := in.buf.get(1, d.n)
	in.gather(dv, dom, cur)
	ci.aux.(*binop).vec(cur, cur, x)
	return in.writeDst(ci, cur)
}

func runPrint(in *instance, ci *cinst) error {
	src := ci.src[0]
	v, err := in.resolve(ci, src, nil, false)
	if err != nil {
		return err
	}
	buf := make([]float64, src.n)
	in.gather(v, src.shape, buf)
	prefix, _ := ci.str("prefix", "")
	w := in.r.out
	if w == nil {
		return nil
	}
	s := prefix
	if s != "" {
		s += " "
	}
	s += formatTile(buf, src.shape, src.dt) + "\n"
	in.r.outMu.Lock()
	defer in.r.outMu.Unlock()
	_, err = w.Write([]byte(s))
	return err
}

// formatTile prints nested brackets like numpy (values with %g).
func formatTile(vals []float64, shape []int, dt dtype.Type) string {
	if len(shape) == 0 {
		return fmtVal(vals[0], dt)
	}
	step := len(vals) / shape[0]
	s := "["
	for i := 0; i < shape[0]; i++ {
		if i > 0 {
			s += " "
			if len(shape) > 1 {
				s += "\n "
			}
		}
		s += formatTile(vals[i*step:(i+1)*step], shape[1:], dt)
	}
	return s + "]"
}

func fmtVal(x float64, dt dtype.Type) string {
	if dt.IsFloat() {
		return fmt.Sprintf("%g", x)
	}
	return fmt.Sprintf("%d", int64(x))
}

func isIdentityPerm(p []int) bool {
	for i, x := range p {
		if i != x {
			return false
		}
	}
	return true
}
