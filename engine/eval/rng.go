package eval

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func init() {
	Register("rng-bit-generator", evalRngBitGenerator)
	Register("rng", evalRng)
}

// rng-bit-generator follows XLA's RngBitGeneratorExpander and
// xla/hlo/builder/lib/prng.cc, which XLA:CPU compiles; RNG_DEFAULT is PHILOX
// on CPU. Types narrower than 32 bits draw u32 values and truncate them.
func evalRngBitGenerator(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 1 || args[0].T == nil {
		return Value{}, fmt.Errorf("rng-bit-generator takes one state operand")
	}
	st := args[0].T
	if st.Type != dtype.U64 || len(st.Dims) != 1 || st.Dims[0] < 2 {
		return Value{}, fmt.Errorf("rng-bit-generator state must be u64[>=2], got %v", st)
	}
	if !in.Shape.IsTuple() || len(in.Shape.Tuple) != 2 {
		return Value{}, fmt.Errorf("rng-bit-generator result must be a (state, bits) tuple")
	}
	out := in.Shape.Tuple[1]
	bitsW := out.Elem.Bits()
	if !out.Elem.IsArray() || out.Elem.IsComplex() || out.Elem == dtype.Pred || bitsW > 64 {
		return Value{}, fmt.Errorf("rng-bit-generator cannot produce %v", out.Elem)
	}
	s := st.U64()
	var vals []uint64
	var newState []uint64
	switch alg := strings.ToLower(in.RngAlgorithm); alg {
	case "rng_three_fry":
		vals, newState = threeFryBits(s, out.Dims, bitsW)
	case "rng_philox", "rng_default", "":
		vals, newState = philoxBits(s, out.Dims, bitsW)
	default:
		return Value{}, fmt.Errorf("rng-bit-generator algorithm %q is not supported", in.RngAlgorithm)
	}
	stateOut := tensor.New(dtype.U64, []int64{int64(len(newState))})
	copy(stateOut.U64(), newState)
	return TupleValue(ArrayValue(stateOut), ArrayValue(storeBits(out.Elem, out.Dims, vals))), nil
}

// storeBits writes raw bit patterns (truncated to the type's width) into a tensor.
func storeBits(typ dtype.Type, dims []int64, vals []uint64) *tensor.Tensor {
	out := tensor.New(typ, dims)
	size := typ.Size()
	for i, v := range vals {
		putBits(out.Data[i*size:], size, v)
	}
	return out
}

func threefry2x32(k0, k1, x0, x1 uint32) (uint32, uint32) {
	rot := [8]int{13, 15, 26, 6, 17, 29, 16, 24}
	ks := [3]uint32{k0, k1, 0x1BD11BDA ^ k0 ^ k1}
	x0 += ks[0]
	x1 += ks[1]
	for g := 0; g < 5; g++ {
		for r := 0; r < 4; r++ {
			x0 += x1
			x1 = bits.RotateLeft32(x1, rot[(g%2)*4+r])
			x1 ^= x0
		}
		x0 += ks[(g+1)%3]
		x1 += ks[(g+2)%3] + uint32(g+1)
	}
	return x0, x1
}

// threeFryBits: key = s[0], counter = s[1] plus the row-major index. 32-bit
// (and narrower) outputs split the shape in halves along its first even dim
// (else its largest), each counter yielding the pair of adjacent elements.
func threeFryBits(s []uint64, dims []int64, width int) ([]uint64, []uint64) {
	k0, k1 := uint32(s[0]), uint32(s[0]>>32)
	n := tensor.NumElements(dims)
	out := make([]uint64, n)
	if width == 64 {
		for i := range out {
			c := s[1] + uint64(i)
			a, b := threefry2x32(k0, k1, uint32(c), uint32(c>>32))
			out[i] = uint64(a) | uint64(b)<<32
		}
		return out, []uint64{s[0], s[1] + uint64(n)}
	}
	if len(dims) == 0 {
		a, _ := threefry2x32(k0, k1, uint32(s[1]), uint32(s[1]>>32))
		out[0] = uint64(a)
		return out, []uint64{s[0], s[1] + 1}
	}
	split := -1
	for i, d := range dims {
		if d%2 == 0 {
			split = i
			break
		}
	}
	if split < 0 {
		for i, d := range dims {
			if split < 0 || d > dims[split] {
				split = i
			}
		}
	}
	half := slices.Clone(dims)
	half[split] = (dims[split] + 1) / 2
	post := tensor.NumElements(dims[split+1:])
	walkIndex(half, func(h int64, idx []int64) {
		c := s[1] + uint64(h)
		a, b := threefry2x32(k0, k1, uint32(c), uint32(c>>32))
		// Element (pre, 2*idx[split]+j, post) takes output word j.
		pre := h / (half[split] * post)
		rest := h % post
		for j, v := range [2]uint32{a, b} {
			pos := 2*idx[split] + int64(j)
			if pos < dims[split] {
				out[(pre*dims[split]+pos)*post+rest] = uint64(v)
			}
		}
	})
	return out, []uint64{s[0], s[1] + uint64(tensor.NumElements(half))}
}

func philox4x32(ctr [4]uint32, k0, k1 uint32) [4]uint32 {
	for r := 0; r < 10; r++ {
		h0, l0 := bits.Mul32(ctr[0], 0xD2511F53)
		h1, l1 := bits.Mul32(ctr[2], 0xCD9E8D57)
		ctr = [4]uint32{h1 ^ ctr[1] ^ k0, l1, h0 ^ ctr[3] ^ k1, l0}
		k0 += 0x9E3779B9
		k1 += 0xBB67AE85
	}
	return ctr
}

// philoxBits: key = s[0]; the u128 counter is (lo=s[1], hi=s[2]) for a state
// of three or more words, else (lo=s[1], hi=s[0]). Each counter yields four
// u32 (or two u64) values, placed round-robin.
func philoxBits(s []uint64, dims []int64, width int) ([]uint64, []uint64) {
	k0, k1 := uint32(s[0]), uint32(s[0]>>32)
	lo, hi := s[1], s[0]
	if len(s) >= 3 {
		hi = s[2]
	}
	n := tensor.NumElements(dims)
	out := make([]uint64, n)
	words := n
	if width == 64 {
		words = 2 * n
	}
	blocks := (words + 3) / 4
	for b := int64(0); b < blocks; b++ {
		l, carry := bits.Add64(lo, uint64(b), 0)
		h := hi + carry
		r := philox4x32([4]uint32{uint32(l), uint32(l >> 32), uint32(h), uint32(h >> 32)}, k0, k1)
		if width == 64 {
			for j := int64(0); j < 2; j++ {
				if i := 2*b + j; i < n {
					out[i] = uint64(r[2*j]) | uint64(r[2*j+1])<<32
				}
			}
			continue
		}
		for j := int64(0); j < 4; j++ {
			if i := 4*b + j; i < n {
				out[i] = uint64(r[j])
			}
		}
	}
	nl, carry := bits.Add64(lo, uint64(blocks), 0)
	if len(s) >= 3 {
		return out, []uint64{s[0], nl, hi + carry}
	}
	return out, []uint64{s[0], nl}
}

// rngCounter advances the best-effort `rng` op between calls.
var rngCounter atomic.Uint64

// evalRng implements the rng distribution op. XLA:CPU expands it with the
// module's seed (a random one when the seed is 0), so its values are not
// reproducible; this draws Philox bits from a process-wide counter and maps
// them with prng.cc's uniform and Box-Muller formulas, matching XLA's
// distribution but not its exact values.
func evalRng(ev *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	if len(args) != 2 || args[0].T == nil || args[1].T == nil || args[0].T.NumElements() != 1 || args[1].T.NumElements() != 1 {
		return Value{}, fmt.Errorf("rng takes two scalar operands")
	}
	out := in.Shape
	n := tensor.NumElements(out.Dims)
	start := rngCounter.Add(uint64(n)) - uint64(n)
	raw, _ := philoxBits([]uint64{0x5eed, start, 0}, []int64{n}, 64)
	unit := make([]float64, n) // uniform in [0, 1) with 53 random bits
	for i, r := range raw {
		unit[i] = float64(r>>11) * 0x1p-53
	}
	switch {
	case strings.EqualFold(in.RngDistribution, "rng_normal"):
		if !out.Elem.IsFloat() {
			return Value{}, fmt.Errorf("rng_normal needs a float result, got %v", out.Elem)
		}
		mu, sigma := toF64s(args[0].T)[0], toF64s(args[1].T)[0]
		vals := make([]float64, n)
		for i := int64(0); i < n; i += 2 {
			u1 := math.Max(unit[i], 1e-7)
			u2 := 0.5
			if i+1 < n {
				u2 = unit[i+1]
			}
			r := math.Sqrt(-2 * math.Log(u1))
			vals[i] = mu + sigma*r*math.Sin(2*math.Pi*u2)
			if i+1 < n {
				vals[i+1] = mu + sigma*r*math.Cos(2*math.Pi*u2)
			}
		}
		return ArrayValue(fromF64s(out.Elem, out.Dims, vals)), nil
	case strings.EqualFold(in.RngDistribution, "rng_uniform"):
		if out.Elem.IsFloat() {
			a, b := toF64s(args[0].T)[0], toF64s(args[1].T)[0]
			vals := make([]float64, n)
			for i, u := range unit {
				vals[i] = u*(b-a) + a
			}
			return ArrayValue(fromF64s(out.Elem, out.Dims, vals)), nil
		}
		if out.Elem.IsInteger() {
			a, b := asI64(args[0].T)[0], asI64(args[1].T)[0]
			span := uint64(b - a)
			vals := make([]int64, n)
			for i, r := range raw {
				if span > 0 {
					vals[i] = a + int64(r%span)
				} else {
					vals[i] = a
				}
			}
			return ArrayValue(newFromI64(out.Elem, out.Dims, vals)), nil
		}
		return Value{}, fmt.Errorf("rng_uniform cannot produce %v", out.Elem)
	}
	return Value{}, fmt.Errorf("rng distribution %q is not supported", in.RngDistribution)
}
