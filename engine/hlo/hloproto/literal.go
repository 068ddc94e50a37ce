package hloproto

import (
	"encoding/binary"
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hlopb"
	"goldtrace/engine/tensor"
)

// ReadLiteral decodes a LiteralProto into a row-major literal. Array data in
// the proto is in the order of the shape's layout (XLA's CopyFromProto), so it
// is relaid out here; a missing layout means the default row-major order.
func ReadLiteral(lp *hlopb.LiteralProto) (*hlo.Literal, error) {
	if lp == nil {
		return nil, fmt.Errorf("missing literal")
	}
	if lp.Shape == nil {
		return nil, fmt.Errorf("literal has no shape")
	}
	return literalFromProto(lp, lp.Shape, 0)
}

// literalFromProto decodes lp's data against shape sp. For tuple elements XLA
// uses the enclosing literal's shape, not the element protos' own shapes.
func literalFromProto(lp *hlopb.LiteralProto, sp *hlopb.ShapeProto, depth int) (*hlo.Literal, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("literal nested deeper than %d", maxDepth)
	}
	if sp == nil {
		return nil, fmt.Errorf("literal has no shape")
	}
	t := dtype.Type(sp.GetElementType())
	if t == dtype.Tuple {
		elems := sp.GetTupleShapes()
		if len(lp.GetTupleLiterals()) != len(elems) {
			return nil, fmt.Errorf("tuple literal has %d elements, shape has %d", len(lp.GetTupleLiterals()), len(elems))
		}
		out := &hlo.Literal{Tuple: make([]*hlo.Literal, len(elems))}
		for i, e := range elems {
			el, err := literalFromProto(lp.GetTupleLiterals()[i], e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("tuple element %d: %w", i, err)
			}
			out.Tuple[i] = el
		}
		return out, nil
	}
	s, err := convertShapeDepth(sp, depth)
	if err != nil {
		return nil, err
	}
	if !t.IsArray() {
		return nil, fmt.Errorf("literal of %v shape", t)
	}
	for _, d := range s.Dims {
		if d == hlo.UnboundedDim {
			return nil, fmt.Errorf("literal with unbounded dimension")
		}
	}
	if err := tensor.CheckShape(t, s.Dims); err != nil {
		return nil, fmt.Errorf("literal: %w", err)
	}
	if s.Layout != nil && len(s.Layout.Tiles) > 0 {
		return nil, fmt.Errorf("literal with tiled layout is not supported")
	}
	n := tensor.NumElements(s.Dims)
	raw, err := literalBytes(lp, t, n)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", tensor.ShapeString(t, s.Dims), err)
	}
	var m2m []int64
	if s.Layout != nil {
		m2m = s.Layout.MinorToMajor
	}
	tt := tensor.New(t, s.Dims)
	relayoutToRowMajor(tt.Data, raw, s.Dims, m2m, t.Size())
	return &hlo.Literal{Tensor: tt}, nil
}

// literalBytes returns the n elements of type t stored in lp as raw
// little-endian bytes in storage order, checking the count first.
func literalBytes(lp *hlopb.LiteralProto, t dtype.Type, n int64) ([]byte, error) {
	count := func(field string, got int, per int64) error {
		if int64(got) != n*per {
			return fmt.Errorf("%s holds %d values, want %d", field, got, n*per)
		}
		return nil
	}
	if b, field, ok := byteField(lp, t); ok {
		per := int64(t.Size())
		if err := count(field, len(b), per); err != nil {
			return nil, err
		}
		if t.IsSubByte() {
			// One element per byte; keep only the value bits so equal values
			// have equal storage whatever the producer put in the high bits.
			mask := byte(1)<<uint(t.Bits()) - 1
			out := make([]byte, len(b))
			for i, v := range b {
				out[i] = v & mask
			}
			return out, nil
		}
		return b, nil
	}
	switch t {
	case dtype.Pred:
		v := lp.GetPreds()
		if err := count("preds", len(v), 1); err != nil {
			return nil, err
		}
		out := make([]byte, len(v))
		for i, x := range v {
			if x {
				out[i] = 1
			}
		}
		return out, nil
	case dtype.S32:
		v := lp.GetS32S()
		if err := count("s32s", len(v), 1); err != nil {
			return nil, err
		}
		return encode(v, 4, func(b []byte, x int32) { binary.LittleEndian.PutUint32(b, uint32(x)) }), nil
	case dtype.U32:
		v := lp.GetU32S()
		if err := count("u32s", len(v), 1); err != nil {
			return nil, err
		}
		return encode(v, 4, binary.LittleEndian.PutUint32), nil
	case dtype.S64:
		v := lp.GetS64S()
		if err := count("s64s", len(v), 1); err != nil {
			return nil, err
		}
		return encode(v, 8, func(b []byte, x int64) { binary.LittleEndian.PutUint64(b, uint64(x)) }), nil
	case dtype.U64:
		v := lp.GetU64S()
		if err := count("u64s", len(v), 1); err != nil {
			return nil, err
		}
		return encode(v, 8, binary.LittleEndian.PutUint64), nil
	case dtype.F32, dtype.C64:
		v, field := lp.GetF32S(), "f32s"
		per := int64(1)
		if t == dtype.C64 {
			v, field, per = lp.GetC64S(), "c64s", 2
		}
		if err := count(field, len(v), per); err != nil {
			return nil, err
		}
		return encode(v, 4, func(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) }), nil
	case dtype.F64, dtype.C128:
		v, field := lp.GetF64S(), "f64s"
		per := int64(1)
		if t == dtype.C128 {
			v, field, per = lp.GetC128S(), "c128s", 2
		}
		if err := count(field, len(v), per); err != nil {
			return nil, err
		}
		return encode(v, 8, func(b []byte, x float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(x)) }), nil
	}
	return nil, fmt.Errorf("no literal field for element type %v", t)
}

// byteField returns the bytes-typed LiteralProto field that holds type t.
func byteField(lp *hlopb.LiteralProto, t dtype.Type) ([]byte, string, bool) {
	switch t {
	case dtype.S1:
		return lp.GetS1S(), "s1s", true
	case dtype.S2:
		return lp.GetS2S(), "s2s", true
	case dtype.S4:
		return lp.GetS4S(), "s4s", true
	case dtype.S8:
		return lp.GetS8S(), "s8s", true
	case dtype.U1:
		return lp.GetU1S(), "u1s", true
	case dtype.U2:
		return lp.GetU2S(), "u2s", true
	case dtype.U4:
		return lp.GetU4S(), "u4s", true
	case dtype.U8:
		return lp.GetU8S(), "u8s", true
	case dtype.S16:
		return lp.GetS16S(), "s16s", true
	case dtype.U16:
		return lp.GetU16S(), "u16s", true
	case dtype.F16:
		return lp.GetF16S(), "f16s", true
	case dtype.BF16:
		return lp.GetBf16S(), "bf16s", true
	case dtype.F4E2M1FN:
		return lp.GetF4E2M1Fns(), "f4e2m1fns", true
	case dtype.F8E3M4:
		return lp.GetF8E3M4S(), "f8e3m4s", true
	case dtype.F8E4M3:
		return lp.GetF8E4M3S(), "f8e4m3s", true
	case dtype.F8E4M3FN:
		return lp.GetF8E4M3Fns(), "f8e4m3fns", true
	case dtype.F8E4M3B11FNUZ:
		return lp.GetF8E4M3B11Fnuzs(), "f8e4m3b11fnuzs", true
	case dtype.F8E4M3FNUZ:
		return lp.GetF8E4M3Fnuzs(), "f8e4m3fnuzs", true
	case dtype.F8E5M2:
		return lp.GetF8E5M2S(), "f8e5m2s", true
	case dtype.F8E5M2FNUZ:
		return lp.GetF8E5M2Fnuzs(), "f8e5m2fnuzs", true
	case dtype.F8E8M0FNU:
		return lp.GetF8E8M0Fnus(), "f8e8m0fnus", true
	}
	return nil, "", false
}

func encode[T any](v []T, size int, put func([]byte, T)) []byte {
	out := make([]byte, len(v)*size)
	for i, x := range v {
		put(out[i*size:], x)
	}
	return out
}

// relayoutToRowMajor copies elements of size bytes from src, stored in the
// physical order given by minor_to_major m2m, into dst in row-major order.
// An empty m2m (no layout) or the default descending order is a plain copy.
func relayoutToRowMajor(dst, src []byte, dims, m2m []int64, size int) {
	rank := len(dims)
	if isDefaultLayout(m2m) {
		copy(dst, src)
		return
	}
	// Physical stride of each logical dimension.
	pstride := make([]int64, rank)
	acc := int64(1)
	for _, d := range m2m {
		pstride[d] = acc
		acc *= dims[d]
	}
	n := tensor.NumElements(dims)
	idx := make([]int64, rank)
	var off int64
	for i := int64(0); i < n; i++ {
		copy(dst[i*int64(size):(i+1)*int64(size)], src[off*int64(size):(off+1)*int64(size)])
		// Advance the row-major index, keeping off = sum(idx*pstride).
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			off += pstride[d]
			if idx[d] < dims[d] {
				break
			}
			off -= idx[d] * pstride[d]
			idx[d] = 0
		}
	}
}

func isDefaultLayout(m2m []int64) bool {
	for i, d := range m2m {
		if d != int64(len(m2m)-1-i) {
			return false
		}
	}
	return true
}
