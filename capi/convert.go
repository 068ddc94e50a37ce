package main

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// convertTensor applies the scalar conversions of engine/dtype element by
// element. One side must be f32 or f64: it exposes exactly the conversions the
// dtype package promises to be bit-exact with ml_dtypes.
func convertTensor(src *tensor.Tensor, dst dtype.Type) (*tensor.Tensor, error) {
	if !dst.IsFloat() || !src.Type.IsFloat() {
		return nil, withStatus(statusInvalidArgument, "convert supports float types only, got %v -> %v", src.Type, dst)
	}
	n := int(src.NumElements())
	out := tensor.New(dst, src.Dims)
	switch {
	case src.Type == dtype.F32:
		in := src.F32()
		for i := 0; i < n; i++ {
			putBits(out, i, dtype.FromF32(dst, in[i]))
		}
	case src.Type == dtype.F64:
		in := src.F64()
		for i := 0; i < n; i++ {
			putBits(out, i, dtype.FromF64(dst, in[i]))
		}
	case dst == dtype.F32:
		o := out.F32()
		for i := 0; i < n; i++ {
			o[i] = dtype.ToF32(src.Type, getBits(src, i))
		}
	case dst == dtype.F64:
		o := out.F64()
		for i := 0; i < n; i++ {
			o[i] = dtype.ToF64(src.Type, getBits(src, i))
		}
	default:
		return nil, withStatus(statusInvalidArgument, "convert needs f32 or f64 on one side, got %v -> %v", src.Type, dst)
	}
	return out, nil
}

func getBits(t *tensor.Tensor, i int) uint64 {
	switch t.Type.Size() {
	case 1:
		return uint64(t.Data[i])
	case 2:
		return uint64(t.U16()[i])
	case 4:
		return uint64(t.U32()[i])
	default:
		return t.U64()[i]
	}
}

func putBits(t *tensor.Tensor, i int, b uint64) {
	switch t.Type.Size() {
	case 1:
		t.Data[i] = byte(b)
	case 2:
		t.U16()[i] = uint16(b)
	case 4:
		t.U32()[i] = uint32(b)
	default:
		t.U64()[i] = b
	}
}
