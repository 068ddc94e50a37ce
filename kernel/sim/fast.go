package sim

import "math"

// Whole-tile fast paths: sources read in place from private storage when
// their tile is contiguous, per-partition (…,1) operands kept as one value
// per row instead of being broadcast, and results computed straight into
// the destination's storage when it is contiguous and unmasked.

// opnd is a source operand over the instruction domain.
type opnd struct {
	full     []float64 // domain-sized values (read-only)
	row      []float64 // one value per row of the domain's last axis
	scalar   float64
	isScalar bool
}

func scalarOpnd(x float64) opnd { return opnd{scalar: x, isScalar: true} }

// contiguous reports whether a view broadcast to dom walks storage
// row-major without gaps (so it is vals[base : base+prod(dom)]).
func contiguous(v view, dom []int) bool {
	if v.offs != nil || v.st.vals == nil {
		return false
	}
	bs := bcastStrides(v.shape, v.str, dom)
	want := 1
	for k := len(dom) - 1; k >= 0; k-- {
		if dom[k] != 1 && bs[k] != want {
			return false
		}
		want *= dom[k]
	}
	return true
}

// isRowBroadcast: the source tile is the domain with a last axis of 1.
func isRowBroadcast(shape, dom []int) bool {
	r := len(dom)
	if r < 2 || dom[r-1] == 1 || len(shape) != r || shape[r-1] != 1 {
		return false
	}
	for k := 0; k < r-1; k++ {
		if shape[k] != dom[k] {
			return false
		}
	}
	return true
}

// operand resolves source k over dom.
func (in *instance) operand(ci *cinst, k int, dom []int, slot int) (opnd, view, error) {
	a := ci.src[k]
	var mc *maskCtx
	if len(ci.mask) > 0 {
		mc = &maskCtx{preds: ci.mask, axisMap: srcMap(a.shape, dom)}
	}
	v, err := in.resolve(ci, a, mc, ci.skipOOB())
	if err != nil {
		return opnd{}, v, err
	}
	if isRowBroadcast(a.shape, dom) {
		rdom := append(append([]int{}, dom[:len(dom)-1]...), 1)
		buf := in.buf.get(slot, prod(rdom))
		in.gather(v, rdom, buf)
		return opnd{row: buf}, v, nil
	}
	n := prod(dom)
	if contiguous(v, dom) {
		return opnd{full: v.st.vals[v.base : v.base+n]}, v, nil
	}
	buf := in.buf.get(slot, n)
	in.gather(v, dom, buf)
	return opnd{full: buf}, v, nil
}

// dstBuf is where an instruction computes its dst[0] values.
type dstBuf struct {
	out    []float64
	direct bool
	v      view
}

// dst prepares dst[0]: its storage itself when contiguous, unmasked and not
// partially overlapping a source view, else scratch slot 3.
func (in *instance) dst(ci *cinst, srcs ...view) (dstBuf, error) {
	d := ci.dst[0]
	if len(ci.mask) == 0 {
		v, err := in.resolve(ci, d, nil, ci.skipOOB())
		if err != nil {
			return dstBuf{}, err
		}
		if contiguous(v, d.shape) {
			ok := true
			for _, s := range srcs {
				if s.st == v.st && !(s.base == v.base && sameInts(s.str, v.str) && sameInts(s.shape, v.shape)) {
					ok = false
				}
			}
			if ok {
				return dstBuf{out: v.st.vals[v.base : v.base+d.n], direct: true, v: v}, nil
			}
		}
	}
	return dstBuf{out: in.buf.get(3, d.n)}, nil
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// commit stores the computed values: rounds them to the dst dtype (unless
// exact: they are representable already) and writes them when not direct.
func (in *instance) commit(ci *cinst, d dstBuf, exact bool) error {
	if d.direct {
		if !exact {
			roundSlice(d.v.st.dt, d.out)
			if ci.dst[0].t.Tf32 {
				roundTF32(d.out)
			}
		}
		return nil
	}
	d0 := ci.dst[0]
	return in.writeAccX(ci, d0, identityMap(len(d0.shape)), d.out, nil, exact)
}

// f32Exact: float32 arithmetic results need no rounding into dt.
func f32Exact(ci *cinst) bool { return ci.dst[0].dt == 11 /* F32 */ && !ci.dst[0].t.Tf32 }

// roundTF32 rounds float32 values to tfloat32 (10 explicit mantissa bits,
// round to nearest even; the value stays a float32).
func roundTF32(xs []float64) {
	for i, x := range xs {
		f := float32(x)
		if f != f {
			continue
		}
		b := math.Float32bits(f)
		b = (b + 0xFFF + (b>>13)&1) &^ 0x1FFF
		xs[i] = float64(math.Float32frombits(b))
	}
}

// apply computes out = a op b over a domain whose last axis has n elements.
func (op *binop) apply(out []float64, a, b opnd, n int) {
	switch {
	case a.full != nil && b.full != nil:
		op.vec(out, a.full, b.full)
	case a.full != nil && b.row != nil:
		for r, s := range b.row {
			op.vecScalar(out[r*n:(r+1)*n], a.full[r*n:(r+1)*n], s, false)
		}
	case a.full != nil && b.isScalar:
		op.vecScalar(out, a.full, b.scalar, false)
	case a.row != nil && b.full != nil:
		for r, s := range a.row {
			op.vecScalar(out[r*n:(r+1)*n], b.full[r*n:(r+1)*n], s, true)
		}
	case a.isScalar && b.full != nil:
		op.vecScalar(out, b.full, a.scalar, true)
	default:
		// both per-row or scalar: compute per row and repeat
		for r := 0; r < len(out)/n; r++ {
			x := a.scalar
			if a.row != nil {
				x = a.row[r]
			}
			y := b.scalar
			if b.row != nil {
				y = b.row[r]
			}
			z := op.scalar(x, y)
			if !op.intOp {
				z = float64(float32(z))
			}
			seg := out[r*n : (r+1)*n]
			for j := range seg {
				seg[j] = z
			}
		}
	}
}

func fullOpnd(x []float64) opnd { return opnd{full: x} }

// contiguousF32 is contiguous for float32 storage.
func contiguousF32(v view, dom []int) bool {
	if v.offs != nil || v.st.f32 == nil {
		return false
	}
	bs := bcastStrides(v.shape, v.str, dom)
	want := 1
	for k := len(dom) - 1; k >= 0; k-- {
		if dom[k] != 1 && bs[k] != want {
			return false
		}
		want *= dom[k]
	}
	return true
}

// transfer copies the values of view s (broadcast to dom) into view d (tile
// dom) in one strided pass, between private float64 and float32 stores.
// The values must already be representable in d's dtype. It reports false
// (and does nothing) for physical memory or explicit-offset views.
func transfer(d, s view, dom []int) bool {
	if d.offs != nil || s.offs != nil || d.st.mem != nil || s.st.mem != nil {
		return false
	}
	ss := bcastStrides(s.shape, s.str, dom)
	ds := d.str
	sv, sf, dv, df := s.st.vals, s.st.f32, d.st.vals, d.st.f32
	rows(dom, [][]int{ds, ss}, []int{d.base, s.base}, func(o, inner []int, n, _ int) {
		dp, sp, di, si := o[0], o[1], inner[0], inner[1]
		switch {
		case dv != nil && sv != nil && di == 1 && si == 1:
			copy(dv[dp:dp+n], sv[sp:sp+n])
		case dv != nil && sv != nil:
			for j := 0; j < n; j++ {
				dv[dp] = sv[sp]
				dp, sp = dp+di, sp+si
			}
		case df != nil && sv != nil && di == 1 && si == 1:
			d, s := df[dp:dp+n], sv[sp:sp+n]
			for j, x := range s {
				d[j] = float32(x)
			}
		case dv != nil && sf != nil && di == 1 && si == 1:
			d, s := dv[dp:dp+n], sf[sp:sp+n]
			for j, x := range s {
				d[j] = float64(x)
			}
		case df != nil && sv != nil:
			for j := 0; j < n; j++ {
				df[dp] = float32(sv[sp])
				dp, sp = dp+di, sp+si
			}
		case dv != nil && sf != nil:
			for j := 0; j < n; j++ {
				dv[dp] = float64(sf[sp])
				dp, sp = dp+di, sp+si
			}
		case di == 1 && si == 1:
			copy(df[dp:dp+n], sf[sp:sp+n])
		default:
			for j := 0; j < n; j++ {
				df[dp] = sf[sp]
				dp, sp = dp+di, sp+si
			}
		}
	})
	return true
}

// fillF32 / fillF64 set every element to x (by doubling copies: memmove
// speed on large tiles).
func fillF32(d []float32, x float32) {
	if len(d) == 0 {
		return
	}
	if x == 0 && math.Float32bits(x) == 0 {
		clear(d)
		return
	}
	d[0] = x
	for n := 1; n < len(d); n *= 2 {
		copy(d[n:], d[:n])
	}
}

func fillF64(d []float64, x float64) {
	if len(d) == 0 {
		return
	}
	if x == 0 && math.Float64bits(x) == 0 {
		clear(d)
		return
	}
	d[0] = x
	for n := 1; n < len(d); n *= 2 {
		copy(d[n:], d[:n])
	}
}

// roundF32ToBF16 is roundSlice(BF16) of float32 values: round to nearest
// even on the top 16 bits (overflow gives ±Inf), NaN kept as is.
func roundF32ToBF16(out []float64, src []float32) {
	out = out[:len(src)]
	for i, x := range src {
		if x != x {
			out[i] = float64(x)
			continue
		}
		b := math.Float32bits(x)
		b = (b + 0x7FFF + (b>>16)&1) &^ 0xFFFF
		out[i] = float64(math.Float32frombits(b))
	}
}
