package sim

import (
	"fmt"
	"math"
	"sort"
)

func registerMoreOps() {
	opTable["range_select"] = opSpec{1, 2, 3, 3, false, prepRangeSelect, runRangeSelect}
	opTable["select_reduce"] = opSpec{1, 2, 2, 3, false, prepSelectReduce, runSelectReduce}
	opTable["bn_stats"] = opSpec{1, 1, 1, 1, true, prepBNStats, runBNStats}
	opTable["bn_aggr"] = opSpec{1, 1, 1, 1, true, prepBNAggr, runBNAggr}
	opTable["max8"] = opSpec{1, 1, 1, 1, true, prepRow8, runMax8}
	opTable["nc_find_index8"] = opSpec{1, 1, 2, 2, true, prepRow8, runFindIndex8}
	opTable["nc_match_replace8"] = opSpec{1, 2, 2, 2, true, prepMatchReplace8, runMatchReplace8}
	opTable["local_gather"] = opSpec{1, 1, 2, 2, false, prepLocalGather, runLocalGather}
	opTable["nc_stream_shuffle"] = opSpec{1, 1, 1, 1, false, prepShuffle, runShuffle}
	opTable["dropout"] = opSpec{1, 1, 1, 2, false, prepDropout, runDropout}
	opTable["rand"] = opSpec{1, 1, 0, 0, false, prepRand, runRand}
	opTable["random_seed"] = opSpec{0, 0, 1, 1, false, prepNone, runRandomSeed}
}

// readTile gathers source k in its own tile shape (no mask), row-major.
func (in *instance) readTile(ci *cinst, k int) ([]float64, error) {
	a := ci.src[k]
	v, err := in.resolve(ci, a, nil, false)
	if err != nil {
		return nil, err
	}
	buf := make([]float64, a.n)
	in.gather(v, a.shape, buf)
	return buf, nil
}

// writeWhole writes vals (row-major over dst[k]'s tile) to dst[k] without
// a mask.
func (in *instance) writeWhole(ci *cinst, k int, vals []float64) error {
	d := ci.dst[k]
	v, err := in.resolve(ci, d, nil, false)
	if err != nil {
		return err
	}
	in.scatter(v, vals, nil)
	return nil
}

func cmpOp(name string) (func(a, b float32) bool, error) {
	switch name {
	case "equal":
		return func(a, b float32) bool { return a == b }, nil
	case "not_equal":
		return func(a, b float32) bool { return a != b }, nil
	case "less":
		return func(a, b float32) bool { return a < b }, nil
	case "less_equal":
		return func(a, b float32) bool { return a <= b }, nil
	case "greater":
		return func(a, b float32) bool { return a > b }, nil
	case "greater_equal":
		return func(a, b float32) bool { return a >= b }, nil
	}
	return nil, fmt.Errorf("unknown comparison %q", name)
}

// ---- range_select ----------------------------------------------------------

type rangeSelAux struct {
	c0, c1 func(a, b float32) bool
	fill   float64
	start  float64
	reduce *binop
	regs   regCmd
}

// range_select: index = range_start + flat free index of the element;
// keep data where comp0(index, bound0) && comp1(index, bound1) (bounds are
// per-partition (P,1) tiles), else fill; dst[1] (P,1) = reduce_op
// (default maximum) of the result per partition.
func prepRangeSelect(ci *cinst) error {
	var a rangeSelAux
	s0, err := ci.str("comp0", "")
	if err != nil {
		return err
	}
	s1, err := ci.str("comp1", "")
	if err != nil {
		return err
	}
	if a.c0, err = cmpOp(s0); err != nil {
		return err
	}
	if a.c1, err = cmpOp(s1); err != nil {
		return err
	}
	if a.fill, err = ci.flt("fill", -3.4028234663852886e38); err != nil {
		return err
	}
	if a.start, err = ci.flt("range_start", 0); err != nil {
		return err
	}
	r, err := ci.str("reduce_op", "maximum")
	if err != nil {
		return err
	}
	if a.reduce, err = lookupBinop(r); err != nil {
		return err
	}
	if a.regs, err = prepRegCmd(ci, "vector"); err != nil {
		return err
	}
	dom := ci.dst[0].shape
	if err := checkBroadcast(ci, 0, dom); err != nil {
		return err
	}
	for k := 1; k < 3; k++ {
		if ci.src[k].n != dom[0] {
			return fmt.Errorf("bound%d tile %v must hold one value per partition", k-1, ci.src[k].shape)
		}
	}
	if len(ci.dst) == 2 {
		if err := checkRowResult(ci.dst[1], dom); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

func runRangeSelect(in *instance, ci *cinst) error {
	a := ci.aux.(rangeSelAux)
	dom := ci.dst[0].shape
	x, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	b0, err := in.readTile(ci, 1)
	if err != nil {
		return err
	}
	b1, err := in.readTile(ci, 2)
	if err != nil {
		return err
	}
	P := dom[0]
	n := len(x) / P
	fill := float64(float32(a.fill))
	for p := 0; p < P; p++ {
		for j := 0; j < n; j++ {
			idx := float32(a.start + float64(j))
			i := p*n + j
			if a.c0(idx, float32(b0[p])) && a.c1(idx, float32(b1[p])) {
				x[i] = float64(float32(x[i]))
			} else {
				x[i] = fill
			}
		}
	}
	if len(ci.dst) == 2 || a.regs.stateful() {
		r, err := in.applyRegs(a.regs, a.reduce, reduceRows(a.reduce, x, P, n, in.domMask(ci, dom)), P)
		if err != nil {
			return ci.errf("invalid", "%v", err)
		}
		if len(ci.dst) == 2 {
			if err := in.writeAcc(ci, ci.dst[1], rowMap(len(ci.dst[1].shape)), r, nil); err != nil {
				return err
			}
		}
	}
	return in.writeDst(ci, x)
}

// ---- select_reduce -----------------------------------------------------------

type selRedAux struct {
	falseTile bool
	fv        float64
	reverse   bool
	reduce    *binop
	regs      regCmd
}

// select_reduce: dst = pred ? on_true : on_false (a (P,1) tile src[2] or
// false_value), reverse_pred flips pred; dst[1] (P,1) = reduce_op (default
// maximum) of the result per partition.
func prepSelectReduce(ci *cinst) error {
	var a selRedAux
	var err error
	a.falseTile = len(ci.src) == 3
	if a.fv, err = ci.flt("false_value", 0); err != nil {
		return err
	}
	if a.reverse, err = ci.boolean("reverse_pred", false); err != nil {
		return err
	}
	r, err := ci.str("reduce_op", "maximum")
	if err != nil {
		return err
	}
	if a.reduce, err = lookupBinop(r); err != nil {
		return err
	}
	if a.regs, err = prepRegCmd(ci, "vector"); err != nil {
		return err
	}
	for k := range ci.src {
		if err := checkBroadcast(ci, k, ci.dst[0].shape); err != nil {
			return err
		}
	}
	if len(ci.dst) == 2 {
		if err := checkRowResult(ci.dst[1], ci.dst[0].shape); err != nil {
			return err
		}
	}
	ci.aux = a
	return nil
}

func runSelectReduce(in *instance, ci *cinst) error {
	a := ci.aux.(selRedAux)
	dom := ci.dst[0].shape
	p, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	t, _, err := in.srcDom(ci, 1, dom, 1)
	if err != nil {
		return err
	}
	var f []float64
	if a.falseTile {
		if f, _, err = in.srcDom(ci, 2, dom, 2); err != nil {
			return err
		}
	}
	out := make([]float64, len(t))
	for i := range out {
		sel := (p[i] != 0 && !math.IsNaN(p[i])) != a.reverse
		switch {
		case sel:
			out[i] = float64(float32(t[i]))
		case f != nil:
			out[i] = float64(float32(f[i]))
		default:
			out[i] = float64(float32(a.fv))
		}
	}
	if len(ci.dst) == 2 || a.regs.stateful() {
		r, err := in.applyRegs(a.regs, a.reduce, reduceRows(a.reduce, out, dom[0], len(out)/dom[0], in.domMask(ci, dom)), dom[0])
		if err != nil {
			return ci.errf("invalid", "%v", err)
		}
		if len(ci.dst) == 2 {
			if err := in.writeAcc(ci, ci.dst[1], rowMap(len(ci.dst[1].shape)), r, nil); err != nil {
				return err
			}
		}
	}
	return in.writeDst(ci, out)
}

// ---- bn_stats / bn_aggr --------------------------------------------------------

// bn_stats: per partition, the free elements (flattened) split into chunks of
// 512; each chunk contributes 6 values: (count, mean, variance*count) of its
// even-position elements, then the same of its odd-position elements, in
// float32 arithmetic (mean by a sequential sum divided by the count, M2 as
// the sequential sum of squared deviations from that mean). dst holds
// 6*ceil(F/512) values per partition.
func prepBNStats(ci *cinst) error {
	src := ci.src[0]
	f := src.n / src.shape[0]
	chunks := (f + 511) / 512
	if ci.dst[0].n != src.shape[0]*6*chunks || ci.dst[0].shape[0] != src.shape[0] {
		return fmt.Errorf("bn_stats of %v needs a dst of %d x %d, got %v", src.shape, src.shape[0], 6*chunks, ci.dst[0].shape)
	}
	return nil
}

func meanM2(xs []float32) (c, mean, m2 float32) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	var s float32
	for _, x := range xs {
		s += x
	}
	c = float32(len(xs))
	mean = s / c
	for _, x := range xs {
		d := x - mean
		m2 += d * d
	}
	return c, mean, m2
}

func runBNStats(in *instance, ci *cinst) error {
	// A mask over the source (the domain) leaves masked-off elements out of
	// the statistics (and out of bounds checks): a chunk's counts are its
	// active elements, so bn_aggr weights it by them.
	src := ci.src[0]
	keep := in.domMask(ci, src.shape)
	var x []float64
	if keep == nil {
		var err error
		if x, err = in.readTile(ci, 0); err != nil {
			return err
		}
	} else {
		v, err := in.resolve(ci, src, &maskCtx{preds: ci.mask, axisMap: identityMap(len(src.shape))}, false)
		if err != nil {
			return err
		}
		x = make([]float64, src.n)
		in.gather(v, src.shape, x)
	}
	P := src.shape[0]
	f := src.n / P
	chunks := (f + 511) / 512
	out := make([]float64, P*6*chunks)
	var ev, od []float32
	for p := 0; p < P; p++ {
		row := x[p*f : (p+1)*f]
		for c := 0; c < chunks; c++ {
			seg := row[c*512 : min((c+1)*512, f)]
			ev, od = ev[:0], od[:0]
			for j, v := range seg {
				if keep != nil && !keep[p*f+c*512+j] {
					continue
				}
				if j%2 == 0 {
					ev = append(ev, float32(v))
				} else {
					od = append(od, float32(v))
				}
			}
			o := out[p*6*chunks+c*6:]
			c0, m0, s0 := meanM2(ev)
			c1, m1, s1 := meanM2(od)
			o[0], o[1], o[2], o[3], o[4], o[5] = float64(c0), float64(m0), float64(s0), float64(c1), float64(m1), float64(s1)
		}
	}
	return in.writeWhole(ci, 0, out)
}

// bn_aggr: per partition, the (count, mean, variance*count) triples of the
// input combine into the overall mean = sum(c*m)/sum(c) and population
// variance = (sum(M2) + sum(c*(m-mean)^2))/sum(c); dst (P,2) = (mean, var).
// Triples with count 0 contribute nothing.
func prepBNAggr(ci *cinst) error {
	src := ci.src[0]
	f := src.n / src.shape[0]
	if f%3 != 0 {
		return fmt.Errorf("bn_aggr input %v does not hold (count, mean, var*count) triples", src.shape)
	}
	if ci.dst[0].n != 2*src.shape[0] {
		return fmt.Errorf("bn_aggr result %v must be (%d, 2)", ci.dst[0].shape, src.shape[0])
	}
	return nil
}

func runBNAggr(in *instance, ci *cinst) error {
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	P := ci.src[0].shape[0]
	f := len(x) / P
	out := make([]float64, 2*P)
	for p := 0; p < P; p++ {
		row := x[p*f : (p+1)*f]
		var n, s float32
		for t := 0; t+2 < f; t += 3 {
			c, m := float32(row[t]), float32(row[t+1])
			if c == 0 {
				continue
			}
			n += c
			s += c * m
		}
		mean := s / n
		var m2 float32
		for t := 0; t+2 < f; t += 3 {
			c, m, v := float32(row[t]), float32(row[t+1]), float32(row[t+2])
			if c == 0 {
				continue
			}
			d := m - mean
			m2 += v + c*d*d
		}
		out[2*p] = float64(mean)
		out[2*p+1] = float64(m2 / n)
	}
	return in.writeWhole(ci, 0, out)
}

// ---- max8 / find_index8 / match_replace8 ------------------------------------------

func prepRow8(ci *cinst) error {
	src := ci.src[0]
	if ci.dst[0].n != 8*src.shape[0] {
		return fmt.Errorf("%s result %v must be (%d, 8)", ci.op, ci.dst[0].shape, src.shape[0])
	}
	if f := src.n / src.shape[0]; f < 8 {
		return fmt.Errorf("%s needs at least 8 elements per partition, %v has %d", ci.op, src.shape, f)
	}
	if len(ci.src) == 2 && ci.src[1].n != 8*src.shape[0] {
		return fmt.Errorf("%s vals %v must hold 8 values per partition", ci.op, ci.src[1].shape)
	}
	return nil
}

// max8: the 8 largest values of each partition (as float32), descending;
// NaN counts as larger than every number.
func runMax8(in *instance, ci *cinst) error {
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	P := ci.src[0].shape[0]
	f := len(x) / P
	out := make([]float64, 8*P)
	row := make([]float64, f)
	for p := 0; p < P; p++ {
		for j := range row {
			row[j] = float64(float32(x[p*f+j]))
		}
		sort.Slice(row, func(i, j int) bool {
			a, b := row[i], row[j]
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.IsNaN(a) && !math.IsNaN(b)
			}
			return a > b
		})
		copy(out[8*p:8*p+8], row[:8])
	}
	return in.writeWhole(ci, 0, out)
}

// nc_find_index8: for each of the 8 values of a partition, the index (in the
// partition's flattened free elements, from 0) of its first occurrence
// (float32 comparison); a value that does not occur gives 0xFFFFFFFF
// (saturated to the dst dtype).
func runFindIndex8(in *instance, ci *cinst) error {
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	vals, err := in.readTile(ci, 1)
	if err != nil {
		return err
	}
	P := ci.src[0].shape[0]
	f := len(x) / P
	out := make([]float64, 8*P)
	for p := 0; p < P; p++ {
		for k := 0; k < 8; k++ {
			v := float32(vals[8*p+k])
			out[8*p+k] = 0xFFFFFFFF
			for j := 0; j < f; j++ {
				if float32(x[p*f+j]) == v {
					out[8*p+k] = float64(j)
					break
				}
			}
		}
	}
	return in.writeWhole(ci, 0, out)
}

type matchAux struct{ imm float64 }

func prepMatchReplace8(ci *cinst) error {
	imm, err := ci.flt("imm", 0)
	if err != nil {
		return err
	}
	src := ci.src[0]
	if ci.dst[0].n != src.n || ci.dst[0].shape[0] != src.shape[0] {
		return fmt.Errorf("result %v must have the data tile's shape %v", ci.dst[0].shape, src.shape)
	}
	if ci.src[1].n != 8*src.shape[0] {
		return fmt.Errorf("vals %v must hold 8 values per partition", ci.src[1].shape)
	}
	if len(ci.dst) == 2 && ci.dst[1].n != 8*src.shape[0] {
		return fmt.Errorf("index result %v must be (%d, 8)", ci.dst[1].shape, src.shape[0])
	}
	ci.aux = matchAux{imm}
	return nil
}

// nc_match_replace8: the 8 values are matched in order, each against the
// first not-yet-replaced occurrence (so duplicated values replace successive
// occurrences, as max8's output with ties needs); matches become imm.
// Optional dst[1] receives the matched indices (0xFFFFFFFF: no match).
func runMatchReplace8(in *instance, ci *cinst) error {
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	vals, err := in.readTile(ci, 1)
	if err != nil {
		return err
	}
	P := ci.src[0].shape[0]
	f := len(x) / P
	imm := ci.aux.(matchAux).imm
	idx := make([]float64, 8*P)
	done := make([]bool, f)
	for p := 0; p < P; p++ {
		clear(done)
		row := x[p*f : (p+1)*f]
		for k := 0; k < 8; k++ {
			v := float32(vals[8*p+k])
			idx[8*p+k] = 0xFFFFFFFF
			for j := range row {
				if !done[j] && float32(row[j]) == v {
					done[j] = true
					idx[8*p+k] = float64(j)
					break
				}
			}
		}
		for j := range row {
			if done[j] {
				row[j] = imm
			}
		}
	}
	if len(ci.dst) == 2 {
		if err := in.writeWhole(ci, 1, idx); err != nil {
			return err
		}
	}
	return in.writeWhole(ci, 0, x)
}

// ---- local_gather ---------------------------------------------------------------

type lgAux struct{ e, valid int }

// local_gather: partitions form groups of 16 (one GpSimd core each). A
// group's indices are its 16 partitions of the index tile flattened
// partition-first (column-major), the first num_valid_indices of them
// (default: all). Every partition p of the group then gathers, for each
// index v (an element offset into p's flattened free elements) in turn,
// num_elem_per_idx contiguous elements: dst[p, i*E + e] = src[p, idx[i] + e].
// An index that reaches past the partition's elements is a bounds error.
func prepLocalGather(ci *cinst) error {
	src, ix := ci.src[0], ci.src[1]
	e, err := ci.integer("num_elem_per_idx", 1)
	if err != nil {
		return err
	}
	P := src.shape[0]
	if P%16 != 0 || ix.shape[0] != P {
		return fmt.Errorf("src %v and index %v need the same partition count, a multiple of 16", src.shape, ix.shape)
	}
	per := ix.n / P * 16
	v, err := ci.integer("num_valid_indices", int64(per))
	if err != nil {
		return err
	}
	if v <= 0 || int(v) > per || e <= 0 {
		return fmt.Errorf("num_valid_indices %d must be in 1..%d and num_elem_per_idx %d positive", v, per, e)
	}
	if ci.dst[0].n != P*int(v)*int(e) || ci.dst[0].shape[0] != P {
		return fmt.Errorf("result %v must hold %d x %d elements", ci.dst[0].shape, P, v*e)
	}
	if !ix.dt.IsInteger() {
		return fmt.Errorf("index tile must be an integer tile, is %v", ix.dt)
	}
	ci.aux = lgAux{int(e), int(v)}
	return nil
}

func runLocalGather(in *instance, ci *cinst) error {
	a := ci.aux.(lgAux)
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	ix, err := in.readTile(ci, 1)
	if err != nil {
		return err
	}
	P := ci.src[0].shape[0]
	f := len(x) / P
	ni := len(ix) / P
	out := make([]float64, P*a.valid*a.e)
	for g := 0; g < P/16; g++ {
		var idx []int
		for j := 0; j < ni && len(idx) < a.valid; j++ {
			for p := 0; p < 16 && len(idx) < a.valid; p++ {
				idx = append(idx, int(ix[(g*16+p)*ni+j]))
			}
		}
		for p := g * 16; p < g*16+16; p++ {
			for i, off := range idx {
				if off < 0 || off+a.e > f {
					return ci.errf("bounds", "index %d gathers elements %d..%d of a partition with %d%s", off, off, off+a.e-1, f, in.where())
				}
				copy(out[p*a.valid*a.e+i*a.e:p*a.valid*a.e+(i+1)*a.e], x[p*f+off:p*f+off+a.e])
			}
		}
	}
	return in.writeWhole(ci, 0, out)
}

// ---- nc_stream_shuffle --------------------------------------------------------

type shuffleAux struct{ mask []int64 }

// nc_stream_shuffle: within every quadrant of 32 partitions, dst partition
// q*32+i takes src partition q*32+mask[i]; mask[i] == 255 leaves it as is.
func prepShuffle(ci *cinst) error {
	m, ok, err := ci.ints("shuffle_mask")
	if err != nil {
		return err
	}
	if !ok || len(m) != 32 {
		return fmt.Errorf("shuffle_mask needs 32 entries, has %d", len(m))
	}
	for _, x := range m {
		if x != 255 && (x < 0 || x >= 32) {
			return fmt.Errorf("shuffle_mask entry %d is neither a partition 0..31 nor 255", x)
		}
	}
	s, d := ci.src[0], ci.dst[0]
	if s.n/s.shape[0] != d.n/d.shape[0] {
		return fmt.Errorf("src %v and dst %v differ in elements per partition", s.shape, d.shape)
	}
	ci.aux = shuffleAux{m}
	return nil
}

func runShuffle(in *instance, ci *cinst) error {
	m := ci.aux.(shuffleAux).mask
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	d := ci.dst[0]
	dv, err := in.resolve(ci, d, nil, false)
	if err != nil {
		return err
	}
	cur := make([]float64, d.n)
	in.gather(dv, d.shape, cur)
	Ps, Pd := ci.src[0].shape[0], d.shape[0]
	f := d.n / Pd
	for q := 0; q*32 < Pd; q++ {
		for i := 0; i < 32 && q*32+i < Pd; i++ {
			if m[i] == 255 {
				continue
			}
			sp := q*32 + int(m[i])
			if sp >= Ps {
				return ci.errf("bounds", "shuffle reads partition %d of a %d-partition source", sp, Ps)
			}
			copy(cur[(q*32+i)*f:(q*32+i+1)*f], x[sp*f:(sp+1)*f])
		}
	}
	in.scatterExact(dv, cur, nil)
	return nil
}

// ---- RNG: dropout, rand, random_seed -----------------------------------------------

type dropAux struct {
	probTile bool
	prob     float64
}

// dropout: each element (row-major over the tile) draws u = uniform [0,1)
// from the instance's generator; it becomes 0 when u < prob (prob a scalar
// or a (P,1) tile), else keeps its value (no rescaling).
func prepDropout(ci *cinst) error {
	var a dropAux
	var err error
	a.probTile = len(ci.src) == 2
	if a.prob, err = ci.flt("prob", 0); err != nil {
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

func runDropout(in *instance, ci *cinst) error {
	a := ci.aux.(dropAux)
	dom := ci.dst[0].shape
	x, _, err := in.srcDom(ci, 0, dom, 0)
	if err != nil {
		return err
	}
	var pr []float64
	if a.probTile {
		if pr, _, err = in.srcDom(ci, 1, dom, 1); err != nil {
			return err
		}
	}
	for i := range x {
		p := a.prob
		if pr != nil {
			p = pr[i]
		}
		if in.rng.uniform() < float64(float32(p)) {
			x[i] = 0
		}
	}
	return in.writeDst(ci, x)
}

type randAux struct{ lo, hi float64 }

// rand: uniform values low + u*(high-low) in float32, u from the generator
// (row-major over the dst tile); distribution "uniform" only.
func prepRand(ci *cinst) error {
	d, err := ci.str("distribution", "uniform")
	if err != nil {
		return err
	}
	if d != "uniform" {
		return fmt.Errorf("distribution %q is not supported (uniform only)", d)
	}
	var a randAux
	if a.lo, err = ci.flt("low", 0); err != nil {
		return err
	}
	if a.hi, err = ci.flt("high", 1); err != nil {
		return err
	}
	ci.aux = a
	return nil
}

func runRand(in *instance, ci *cinst) error {
	a := ci.aux.(randAux)
	buf := make([]float64, ci.dst[0].n)
	lo, span := float32(a.lo), float32(a.hi-a.lo)
	for i := range buf {
		buf[i] = float64(lo + float32(in.rng.uniform())*span)
	}
	return in.writeDst(ci, buf)
}

// random_seed: the generator state is reseeded from the first element of the
// seed tile (its integer value, or the float's bits for float tiles).
func runRandomSeed(in *instance, ci *cinst) error {
	x, err := in.readTile(ci, 0)
	if err != nil {
		return err
	}
	v := x[0]
	var s uint64
	if ci.src[0].dt.IsFloat() {
		s = math.Float64bits(v)
	} else {
		s = uint64(int64(v))
	}
	in.rng.seed(s)
	return nil
}
