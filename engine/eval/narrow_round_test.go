package eval

import (
	"math"
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// roundCases are f32 bit patterns around every bf16 and f16 rounding
// boundary: each 16-bit top half with low halves at and around the bf16
// midpoint, each f16 pattern widened with low bits at and around the f16
// midpoint, and random patterns.
func roundCases(rng *rand.Rand) []uint32 {
	var xs []uint32
	for hi := range uint32(1 << 16) {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, uint32(rng.Intn(1 << 16))} {
			xs = append(xs, hi<<16|lo)
		}
	}
	for h := range uint16(0xffff) {
		b := math.Float32bits(dtype.ToF32(dtype.F16, uint64(h)))
		for _, d := range []int32{0, 1, -1, 0xfff, 0x1000, 0x1001, -0x1000, -0xfff, -0x1001} {
			xs = append(xs, uint32(int32(b)+d))
		}
	}
	// Below the f16 normals (f16 subnormals, f32 subnormals, 2^-25).
	for range 1 << 20 {
		xs = append(xs, uint32(rng.Intn(0x38800000))|uint32(rng.Intn(2))<<31)
	}
	for range 1 << 21 {
		xs = append(xs, rng.Uint32())
	}
	return xs
}

// The in-place roundings to bf16 and f16, scalar and at every vector width
// the CPU runs, against dtype's converters (FromF32 then ToF32), bit for bit.
func TestRoundNarrowMatchesConverters(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	xs := roundCases(rng)
	defer func(l int) { subnormalLanes = l }(subnormalLanes)
	for _, typ := range []dtype.Type{dtype.BF16, dtype.F16} {
		want := make([]uint32, len(xs))
		for i, b := range xs {
			want[i] = math.Float32bits(dtype.ToF32(typ, dtype.FromF32(typ, math.Float32frombits(b))))
		}
		for _, lanes := range subnormalLaneWidths() {
			subnormalLanes = lanes
			got := append([]uint32(nil), xs...)
			// odd lengths, so the scalar tails run too
			for lo := 0; lo < len(got); lo += 1001 {
				part := got[lo:min(lo+1001, len(got))]
				if typ == dtype.BF16 {
					roundBF16Bits(part)
				} else {
					roundF16Bits(part)
				}
			}
			bad := 0
			for i := range got {
				if got[i] != want[i] {
					if bad < 5 {
						t.Errorf("%v lanes %d: %#08x rounds to %#08x, want %#08x", typ, lanes, xs[i], got[i], want[i])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%v lanes %d: %d of %d differ", typ, lanes, bad, len(xs))
			}
		}
	}
}

// fmaF16Block against evalFMA's f16 arithmetic (dtype's widening to f64,
// math.FMA, dtype.FromF64), over random f16 triples with NaNs, infinities,
// zeros and subnormals, and triples whose sum sits on an f16 midpoint.
func TestFMAF16BlockMatchesConverters(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const n = 1 << 20
	a, b, c, got := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	h := func() uint16 {
		switch rng.Intn(4) {
		case 0:
			return uint16(rng.Intn(1 << 16))
		case 1:
			return uint16(rng.Intn(0x800)) | uint16(rng.Intn(2))<<15 // subnormal or small
		}
		return uint16(0x3000+rng.Intn(0x1800)) | uint16(rng.Intn(2))<<15 // near 1
	}
	bits := make([][3]uint16, n)
	for i := range n {
		bits[i] = [3]uint16{h(), h(), h()}
		if i%4 == 0 {
			// x*1 + z: the sum of two f16 values, often a tie
			bits[i][1] = 0x3c00
		}
		a[i] = dtype.ToF32(dtype.F16, uint64(bits[i][0]))
		b[i] = dtype.ToF32(dtype.F16, uint64(bits[i][1]))
		c[i] = dtype.ToF32(dtype.F16, uint64(bits[i][2]))
	}
	fmaF16Block(a, b, c, got)
	bad := 0
	for i := range n {
		w := func(k int) float64 { return dtype.ToF64(dtype.F16, uint64(bits[i][k])) }
		want := dtype.FromF64(dtype.F16, math.FMA(w(0), w(1), w(2)))
		if g := dtype.FromF32(dtype.F16, got[i]); g != want {
			if bad < 5 {
				t.Errorf("fma(%#04x, %#04x, %#04x) = %#04x, want %#04x", bits[i][0], bits[i][1], bits[i][2], g, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d differ", bad, n)
	}
}

// encodeF32 and asF32 (on all cores, vector rounding) against dtype's
// EncodeF32 and DecodeF32 on the round cases, both narrow types.
func TestEncodeNarrowMatchesDtype(t *testing.T) {
	xs := roundCases(rand.New(rand.NewSource(2)))
	f := make([]float32, len(xs))
	for i, b := range xs {
		f[i] = math.Float32frombits(b)
	}
	defer func(on bool) { narrowBF16VectorOn = on }(narrowBF16VectorOn)
	for _, typ := range []dtype.Type{dtype.BF16, dtype.F16} {
		want, got := make([]byte, 2*len(f)), make([]byte, 2*len(f))
		dtype.EncodeF32(typ, f, want)
		for _, on := range []bool{false, true} {
			narrowBF16VectorOn = on
			clear(got)
			encodeF32(typ, f, got)
			if string(got) != string(want) {
				t.Fatalf("%v (vector narrowing %v): encodeF32 differs from dtype.EncodeF32", typ, on)
			}
		}
		tt := &tensor.Tensor{Type: typ, Dims: []int64{int64(len(f))}, Data: want}
		w := make([]float32, len(f))
		dtype.DecodeF32(typ, want, w)
		for i, v := range asF32(tt) {
			if math.Float32bits(v) != math.Float32bits(w[i]) {
				t.Fatalf("%v: asF32 element %d = %#x, want %#x", typ, i, math.Float32bits(v), math.Float32bits(w[i]))
			}
		}
	}
}

// The vector widenings and narrowings (widenNarrowBlock, storeNarrow) at
// every vector width the CPU runs, against dtype's DecodeF32 and EncodeF32
// bit for bit: every bf16 and f16 pattern widened, and the round cases
// narrowed (f16 rounds any f32; bf16 stores the top halves of its values,
// NaN payloads kept).
func TestWidenNarrowVectorsMatchDtype(t *testing.T) {
	defer func(l int) { subnormalLanes = l }(subnormalLanes)
	all := make([]byte, 2<<16)
	for h := range 1 << 16 {
		all[2*h], all[2*h+1] = byte(h), byte(h>>8)
	}
	xs := roundCases(rand.New(rand.NewSource(5)))
	f := make([]float32, len(xs))
	for i, b := range xs {
		f[i] = math.Float32frombits(b)
	}
	for _, typ := range []dtype.Type{dtype.BF16, dtype.F16} {
		want := make([]float32, 1<<16)
		dtype.DecodeF32(typ, all, want)
		var wantN []byte
		src := f
		if typ == dtype.BF16 {
			// storeNarrow's bf16 values: any top half, low half zero
			src = make([]float32, len(xs))
			for i, b := range xs {
				src[i] = math.Float32frombits(b &^ 0xffff)
			}
		}
		wantN = make([]byte, 2*len(src))
		if typ == dtype.BF16 {
			for i, v := range src { // the top half, NaN payloads kept
				b := math.Float32bits(v)
				wantN[2*i], wantN[2*i+1] = byte(b>>16), byte(b>>24)
			}
		} else {
			dtype.EncodeF32(typ, src, wantN)
		}
		for _, lanes := range subnormalLaneWidths() {
			subnormalLanes = lanes
			got := make([]float32, 1<<16)
			for lo := 0; lo < len(got); lo += 1001 { // odd pieces: the tails too
				hi := min(lo+1001, len(got))
				widenNarrowBlock(typ, all[2*lo:2*hi], got[lo:hi])
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v lanes %d: %#04x widens to %#08x, want %#08x", typ, lanes, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
			gotN := make([]byte, len(wantN))
			for lo := 0; lo < len(src); lo += 1001 {
				hi := min(lo+1001, len(src))
				storeNarrow(typ, src[lo:hi], gotN[2*lo:2*hi])
			}
			for i := 0; i < len(src); i++ {
				if gotN[2*i] != wantN[2*i] || gotN[2*i+1] != wantN[2*i+1] {
					t.Fatalf("%v lanes %d: %#08x narrows to %#02x%02x, want %#02x%02x", typ, lanes, math.Float32bits(src[i]),
						gotN[2*i+1], gotN[2*i], wantN[2*i+1], wantN[2*i])
				}
			}
		}
	}
}

// fmaF16Block's vector lanes against its scalar loop, bit for bit, at every
// vector width the CPU runs (the converter test above checks the scalar
// loop against dtype; NaN lanes show the vector's hand-off to it).
func TestFMAF16VectorMatchesScalar(t *testing.T) {
	defer func(l int) { subnormalLanes = l }(subnormalLanes)
	rng := rand.New(rand.NewSource(4))
	const n = 1<<20 + 5
	h := func() float32 {
		var b uint16
		switch rng.Intn(5) {
		case 0:
			b = uint16(rng.Intn(1 << 16))
			if b&0x7c00 == 0x7c00 && rng.Intn(8) != 0 {
				b &^= 0x0400 // NaNs and infinities, but rarer
			}
		case 1:
			b = uint16(rng.Intn(0x800)) | uint16(rng.Intn(2))<<15
		case 2:
			b = uint16(0x7800+rng.Intn(0x400)) | uint16(rng.Intn(2))<<15 // near the top
		default:
			b = uint16(0x3000+rng.Intn(0x1800)) | uint16(rng.Intn(2))<<15
		}
		return dtype.ToF32(dtype.F16, uint64(b))
	}
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		a[i], b[i], c[i] = h(), h(), h()
		if i%3 == 0 {
			b[i] = 1 // a sum of two f16 values, often a tie
		}
	}
	want := make([]float32, n)
	fmaF16Scalar(a, b, c, want)
	for _, lanes := range subnormalLaneWidths() {
		subnormalLanes = lanes
		got := make([]float32, n)
		for lo := 0; lo < n; lo += 1001 {
			hi := min(lo+1001, n)
			fmaF16Block(a[lo:hi], b[lo:hi], c[lo:hi], got[lo:hi])
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("lanes %d: fma(%v, %v, %v) = %#08x, want %#08x", lanes, a[i], b[i], c[i], math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}
