package sim

import (
	"encoding/binary"
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

// view is an access resolved for one execution: storage, a base offset and
// one stride per tile axis (elements for private storage, bytes for physical
// memory), or explicit offsets per tile element (dynamic indices, masked
// edges), -1 marking an element to skip.
type view struct {
	st    *storage
	shape []int
	base  int
	str   []int
	offs  []int
	acc   *cacc
}

// maskCtx is what bounds checking needs to know about the instruction's
// mask: the mask's predicates over the domain and how the access's tile axes
// map onto domain axes (axisMap[k] = domain axis of tile axis k, or -1).
type maskCtx struct {
	preds   []cpred
	axisMap []int
	keep    []bool // explicit per-tile-element mask (overrides preds)
}

// resolve turns an access into a view, checking bounds. skipOOB: dynamic
// indices out of range mark the element skipped instead of failing.
func (in *instance) resolve(ci *cinst, a *cacc, mc *maskCtx, skipOOB bool) (view, error) {
	st := in.stores[a.tensor]
	v := view{st: st, shape: a.shape, str: make([]int, len(a.shape)), acc: a}
	t := a.t
	// per tensor dim: outer value, index range over the tile
	nd := len(a.idx)
	outer := make([]int64, nd)
	var elemStr []int64 // storage offset per unit of tensor dim d
	if st.mem != nil {
		esz := int64(st.dt.Size())
		elemStr = make([]int64, nd)
		acc := esz
		for d := nd - 1; d >= 1; d-- {
			elemStr[d] = acc
			acc *= t.Shape[d]
		}
		if nd > 0 {
			elemStr[0] = int64(st.partStride)
		}
	} else {
		elemStr = a.tstr
	}
	base := int64(0)
	if st.mem != nil {
		al := t.Allocation
		off := al.PartitionOffset*int64(st.partStride) + al.ByteOffset
		if al.NumFreeTiles > 1 {
			off += (in.vars[al.LoopVar] % al.NumFreeTiles) * al.BytesPerTile
		}
		base = off
	}
	oob := -1
	for d := range a.idx {
		ix := &a.idx[d]
		o := ix.outer(in)
		outer[d] = o
		lo, hi := o, o
		for k, c := range ix.tile {
			ext := c * int64(a.shape[k]-1)
			if ext < 0 {
				lo += ext
			} else {
				hi += ext
			}
			v.str[k] += int(c * elemStr[d])
		}
		base += o * elemStr[d]
		if lo < 0 || hi >= t.Shape[d] {
			if oob < 0 {
				oob = d
			}
		}
	}
	v.base = int(base)
	if len(a.dyn) == 0 && oob < 0 {
		return v, nil
	}
	if len(a.dyn) == 0 && (mc == nil || (len(mc.preds) == 0 && mc.keep == nil)) {
		d := oob
		lo, hi := rangeOf(&a.idx[d], outer[d], a.shape)
		return v, ci.errf("bounds", "access to %s[%s] reaches index %d..%d of dimension %d (size %d)%s",
			t.Name, shapeStr(t.Shape), lo, hi, d, t.Shape[d], in.where())
	}
	// Slow path: explicit offsets per tile element.
	n := a.n
	offs := make([]int, n)
	var dynVals [][]float64
	for _, dy := range a.dyn {
		dv, err := in.resolve(ci, dy.acc, nil, false)
		if err != nil {
			return v, err
		}
		buf := make([]float64, n)
		in.gather(dv, a.shape, buf)
		dynVals = append(dynVals, buf)
	}
	var keep []bool
	if mc != nil && mc.keep != nil {
		keep = mc.keep
	} else if mc != nil && len(mc.preds) > 0 {
		keep = make([]bool, n)
		tileMaskFor(in, mc, a.shape, keep)
	}
	idx := make([]int, len(a.shape))
	ti := make([]int64, nd)
	for e := 0; e < n; e++ {
		if keep != nil && !keep[e] {
			offs[e] = -1
		} else {
			off := base
			bad := -1
			for d := range a.idx {
				x := outer[d]
				for k, c := range a.idx[d].tile {
					x += c * int64(idx[k])
				}
				for j, dy := range a.dyn {
					if dy.dim == d {
						dvv := dynVals[j][e]
						if math.IsNaN(dvv) {
							x = -1 << 40
						} else {
							x += int64(dvv)
						}
					}
				}
				ti[d] = x
				if x < 0 || x >= t.Shape[d] {
					bad = d
					break
				}
				off += (x - outer[d]) * elemStr[d]
			}
			if bad >= 0 {
				if skipOOB && len(a.dyn) > 0 {
					offs[e] = -1
				} else {
					return v, ci.errf("bounds", "access to %s[%s] reaches index %d of dimension %d (size %d) at tile element %v%s",
						t.Name, shapeStr(t.Shape), ti[bad], bad, t.Shape[bad], append([]int{}, idx...), in.where())
				}
			} else {
				offs[e] = int(off)
			}
		}
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < a.shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	v.offs = offs
	return v, nil
}

func rangeOf(ix *caff, o int64, shape []int) (int64, int64) {
	lo, hi := o, o
	for k, c := range ix.tile {
		ext := c * int64(shape[k]-1)
		if ext < 0 {
			lo += ext
		} else {
			hi += ext
		}
	}
	return lo, hi
}

func shapeStr(s []int64) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprint(x)
	}
	return out
}

// where describes the loop variables and program ids of the failing
// execution.
func (in *instance) where() string {
	s := ""
	if len(in.pid) > 0 {
		s += fmt.Sprintf(" (program id %v", in.pid)
	}
	if len(in.vars) > 1 {
		if s == "" {
			s += " ("
		} else {
			s += ", "
		}
		s += fmt.Sprintf("loop vars %v", in.vars[:len(in.vars)-1])
	}
	if s != "" {
		s += ")"
	}
	return s
}

// tileMaskFor evaluates mc's predicates on every element of a tile of the
// given shape (axes mapped by mc.axisMap; predicates over unmapped domain
// axes are ignored, i.e. taken as true).
func tileMaskFor(in *instance, mc *maskCtx, shape []int, keep []bool) {
	for i := range keep {
		keep[i] = true
	}
	for _, p := range mc.preds {
		// coefficient per tile axis; skip predicates using unmapped axes
		co := make([]int64, len(shape))
		usable := true
		for dax, c := range p.e.tile {
			if c == 0 {
				continue
			}
			found := false
			for k, m := range mc.axisMap {
				if m == dax {
					co[k] = c
					found = true
				}
			}
			if !found {
				usable = false
			}
		}
		if !usable {
			continue
		}
		evalPred(p.e.outer(in), co, shape, p.cmp, keep)
	}
}

// evalPred ANDs (c + sum co[k]*t_k cmp 0) into keep over a row-major tile.
func evalPred(c int64, co []int64, shape []int, cmp irpb.Cmp, keep []bool) {
	r := len(shape)
	idx := make([]int, r)
	val := c
	for e := range keep {
		if keep[e] && !cmpOK(val, cmp) {
			keep[e] = false
		}
		for k := r - 1; k >= 0; k-- {
			idx[k]++
			val += co[k]
			if idx[k] < shape[k] {
				break
			}
			val -= co[k] * int64(shape[k])
			idx[k] = 0
		}
	}
}

func cmpOK(v int64, c irpb.Cmp) bool {
	switch c {
	case irpb.Cmp_LT:
		return v < 0
	case irpb.Cmp_LE:
		return v <= 0
	case irpb.Cmp_GT:
		return v > 0
	case irpb.Cmp_GE:
		return v >= 0
	case irpb.Cmp_EQ:
		return v == 0
	case irpb.Cmp_NE:
		return v != 0
	}
	return false
}

// bcastStrides gives the view's strides over a domain it broadcasts to
// (right-aligned; size-1 axes and missing leading axes stride 0).
func bcastStrides(shape []int, str []int, dom []int) []int {
	out := make([]int, len(dom))
	drop, off, _ := alignSrc(shape, dom)
	for i := drop; i < len(shape); i++ {
		d := off + i - drop
		if shape[i] != 1 || dom[d] == 1 {
			out[d] = str[i]
		}
	}
	return out
}

// rows walks the domain row by row (last axis innermost), after merging
// axes that are contiguous for every stride set; f gets each row's offsets,
// inner strides, length and the row's position in the row-major domain.
func rows(dom []int, strs [][]int, bases []int, f func(offs []int, inner []int, n int, pos int)) {
	// merge axes
	d := append([]int{}, dom...)
	ss := make([][]int, len(strs))
	for i := range strs {
		ss[i] = append([]int{}, strs[i]...)
	}
	for k := len(d) - 2; k >= 0; k-- {
		ok := true
		for i := range ss {
			if ss[i][k] != ss[i][k+1]*d[k+1] {
				ok = false
				break
			}
		}
		if d[k] == 1 {
			ok = true
			for i := range ss {
				ss[i][k] = 0
			}
		}
		if ok {
			d[k+1] *= d[k]
			d = append(d[:k], d[k+1:]...)
			for i := range ss {
				ss[i] = append(ss[i][:k], ss[i][k+1:]...)
			}
		}
	}
	r := len(d)
	inner := make([]int, len(ss))
	offs := append([]int{}, bases...)
	if r == 0 {
		f(offs, inner, 1, 0)
		return
	}
	for i := range ss {
		inner[i] = ss[i][r-1]
	}
	n := d[r-1]
	if n == 0 {
		return
	}
	idx := make([]int, r)
	pos := 0
	for {
		f(offs, inner, n, pos)
		pos += n
		k := r - 2
		for ; k >= 0; k-- {
			idx[k]++
			for i := range ss {
				offs[i] += ss[i][k]
			}
			if idx[k] < d[k] {
				break
			}
			for i := range ss {
				offs[i] -= ss[i][k] * d[k]
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// gather reads the view broadcast to dom into out (row-major over dom).
// Skipped elements (offs -1) read as NaN.
func (in *instance) gather(v view, dom []int, out []float64) {
	st := v.st
	if v.offs != nil {
		ts := bcastStrides(v.shape, rowStrides(v.shape), dom)
		rows(dom, [][]int{ts}, []int{0}, func(o, inner []int, n, pos int) {
			t := o[0]
			for j := 0; j < n; j++ {
				off := v.offs[t]
				if off < 0 {
					out[pos+j] = math.NaN()
				} else {
					out[pos+j] = st.load(off)
				}
				t += inner[0]
			}
		})
		return
	}
	bs := bcastStrides(v.shape, v.str, dom)
	if st.f32 != nil {
		f := st.f32
		rows(dom, [][]int{bs}, []int{v.base}, func(o, inner []int, n, pos int) {
			s := inner[0]
			dst := out[pos : pos+n]
			if s == 1 {
				for j, x := range f[o[0] : o[0]+n] {
					dst[j] = float64(x)
				}
				return
			}
			p := o[0]
			for j := range dst {
				dst[j] = float64(f[p])
				p += s
			}
		})
		return
	}
	if st.mem == nil {
		vals := st.vals
		rows(dom, [][]int{bs}, []int{v.base}, func(o, inner []int, n, pos int) {
			s := inner[0]
			dst := out[pos : pos+n]
			switch s {
			case 1:
				copy(dst, vals[o[0]:o[0]+n])
			case 0:
				x := vals[o[0]]
				for j := range dst {
					dst[j] = x
				}
			default:
				p := o[0]
				for j := range dst {
					dst[j] = vals[p]
					p += s
				}
			}
		})
		return
	}
	rows(dom, [][]int{bs}, []int{v.base}, func(o, inner []int, n, pos int) {
		p := o[0]
		for j := 0; j < n; j++ {
			out[pos+j] = st.load(p)
			p += inner[0]
		}
	})
}

func rowStrides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// load reads one element at offset off (private: element index; physical:
// byte address).
func (st *storage) load(off int) float64 {
	if st.f32 != nil {
		return float64(st.f32[off])
	}
	if st.mem == nil {
		return st.vals[off]
	}
	var bits uint64
	switch st.dt.Size() {
	case 1:
		bits = uint64(st.mem[off])
	case 2:
		bits = uint64(binary.LittleEndian.Uint16(st.mem[off:]))
	case 4:
		bits = uint64(binary.LittleEndian.Uint32(st.mem[off:]))
	}
	if st.dt.IsFloat() {
		return dtype.ToF64(st.dt, bits)
	}
	return float64(dtype.DecodeInt(st.dt, bits))
}

// storeRounded writes x (already rounded to st.dt) at off.
func (st *storage) storeRounded(off int, x float64) {
	if st.f32 != nil {
		st.f32[off] = float32(x)
		return
	}
	if st.mem == nil {
		st.vals[off] = x
		return
	}
	var bits uint64
	if st.dt.IsFloat() {
		bits = dtype.FromF64(st.dt, x)
	} else {
		bits = dtype.EncodeInt(st.dt, int64(x))
	}
	switch st.dt.Size() {
	case 1:
		st.mem[off] = byte(bits)
	case 2:
		binary.LittleEndian.PutUint16(st.mem[off:], uint16(bits))
	case 4:
		binary.LittleEndian.PutUint32(st.mem[off:], uint32(bits))
	}
}

// scatter rounds vals (row-major over the view's own tile shape) to the
// storage dtype in place and writes them where keep (nil: everywhere) is
// true and the view does not skip the element.
func (in *instance) scatter(v view, vals []float64, keep []bool) {
	roundSlice(v.st.dt, vals)
	in.scatterExact(v, vals, keep)
}

// scatterExact is scatter for values already representable in the dtype.
func (in *instance) scatterExact(v view, vals []float64, keep []bool) {
	st := v.st
	if v.offs != nil {
		for e, off := range v.offs {
			if off >= 0 && (keep == nil || keep[e]) {
				st.storeRounded(off, vals[e])
			}
		}
		return
	}
	if st.f32 != nil && keep == nil {
		f := st.f32
		rows(v.shape, [][]int{v.str}, []int{v.base}, func(o, inner []int, n, pos int) {
			s := inner[0]
			src := vals[pos : pos+n]
			if s == 1 {
				d := f[o[0] : o[0]+n]
				for j, x := range src {
					d[j] = float32(x)
				}
				return
			}
			p := o[0]
			for _, x := range src {
				f[p] = float32(x)
				p += s
			}
		})
		return
	}
	if st.vals != nil && keep == nil {
		dst := st.vals
		rows(v.shape, [][]int{v.str}, []int{v.base}, func(o, inner []int, n, pos int) {
			s := inner[0]
			src := vals[pos : pos+n]
			if s == 1 {
				copy(dst[o[0]:o[0]+n], src)
				return
			}
			p := o[0]
			for _, x := range src {
				dst[p] = x
				p += s
			}
		})
		return
	}
	rows(v.shape, [][]int{v.str}, []int{v.base}, func(o, inner []int, n, pos int) {
		p := o[0]
		for j := 0; j < n; j++ {
			if keep == nil || keep[pos+j] {
				st.storeRounded(p, vals[pos+j])
			}
			p += inner[0]
		}
	})
}

// roundSlice rounds every value to dtype t: floats with ml_dtypes'
// round-to-nearest-even and overflow rules, integers half to even then
// saturated (NaN -> 0), bool: nonzero -> 1.
func roundSlice(t dtype.Type, xs []float64) {
	switch {
	case t == dtype.F32:
		for i, x := range xs {
			xs[i] = float64(float32(x))
		}
	case t == dtype.BF16:
		// bf16 rounds through float32 (as ml_dtypes does from float64):
		// round to nearest even on the top 16 bits; overflow carries into
		// the exponent and gives ±Inf; NaN stays NaN.
		for i, x := range xs {
			f := float32(x)
			if f != f {
				xs[i] = x
				continue
			}
			b := math.Float32bits(f)
			b = (b + 0x7FFF + (b>>16)&1) &^ 0xFFFF
			xs[i] = float64(math.Float32frombits(b))
		}
	case t.IsFloat():
		for i, x := range xs {
			xs[i] = dtype.ToF64(t, dtype.FromF64(t, x))
		}
	default:
		for i, x := range xs {
			xs[i] = roundInt(t, x)
		}
	}
}

func roundTo(t dtype.Type, x float64) float64 {
	switch {
	case t == dtype.F32:
		return float64(float32(x))
	case t.IsFloat():
		return dtype.ToF64(t, dtype.FromF64(t, x))
	}
	return roundInt(t, x)
}

func roundInt(t dtype.Type, x float64) float64 {
	if t == dtype.Pred {
		if x != 0 && !math.IsNaN(x) {
			return 1
		}
		return 0
	}
	if math.IsNaN(x) {
		return 0
	}
	x = math.RoundToEven(x)
	var lo, hi float64
	if t.IsSigned() {
		hi = float64(int64(1)<<(t.Bits()-1) - 1)
		lo = -hi - 1
	} else {
		hi = float64(uint64(1)<<t.Bits() - 1)
	}
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// gatherF32 is gather into float32 (values of dtypes up to 32 bits; wide
// integers round to float32 as the engines read them).
func (in *instance) gatherF32(v view, dom []int, out []float32) {
	st := v.st
	if v.offs != nil || st.vals == nil {
		tmp := make([]float64, len(out))
		in.gather(v, dom, tmp)
		for i, x := range tmp {
			out[i] = float32(x)
		}
		return
	}
	vals := st.vals
	bs := bcastStrides(v.shape, v.str, dom)
	rows(dom, [][]int{bs}, []int{v.base}, func(o, inner []int, n, pos int) {
		s := inner[0]
		dst := out[pos : pos+n]
		if s == 1 {
			src := vals[o[0] : o[0]+n]
			for j, x := range src {
				dst[j] = float32(x)
			}
			return
		}
		p := o[0]
		for j := range dst {
			dst[j] = float32(vals[p])
			p += s
		}
	})
}
