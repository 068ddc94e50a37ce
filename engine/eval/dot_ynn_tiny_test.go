package eval

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// tinyValue draws a float32 that is sometimes special: zeros of either
// sign, infinities, subnormals, huge values, NaN (when nan).
func tinyValue(r *rand.Rand, nan bool) float32 {
	switch r.Intn(40) {
	case 0:
		return float32(math.Inf(1 - 2*r.Intn(2)))
	case 1:
		return math.Float32frombits(uint32(r.Intn(1 << 23)))
	case 2:
		return -math.Float32frombits(uint32(r.Intn(1 << 23)))
	case 3:
		return float32(math.Copysign(0, float64(r.Intn(2)*2-1)))
	case 4:
		return float32(r.NormFloat64() * 1e38)
	case 5:
		if nan {
			return math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)) | uint32(r.Intn(2))<<31)
		}
	case 6:
		return float32(r.NormFloat64() * 1e-19) // products near the subnormal range
	}
	return float32(r.NormFloat64())
}

// TestYNNTinyMatchesGeneral checks runTiny against runGeneral bit for bit
// on random batched tiny products, both B layouts, plans of both ISAs.
func TestYNNTinyMatchesGeneral(t *testing.T) {
	if ynnISA == 0 {
		t.Skip("no YNNPACK order on this build")
	}
	r := rand.New(rand.NewSource(7))
	kn := kernelFor[float32]()
	ran := 0
	for it := 0; it < 400; it++ {
		m, n, k := 1+r.Intn(ynnTinyMax), 1+r.Intn(ynnTinyMax), 1+r.Intn(ynnTinyMax)
		if it%4 == 1 {
			n = 8 * (1 + r.Intn(ynnTinyMax/8)) // whole vectors: row-major operands read in place
		}
		if it%3 == 2 {
			// Batched products past ynnTinyMax (takesSmall's second
			// case): long K (several K blocks of some plans), tall A,
			// wide B.
			m, n, k = 1+r.Intn(80), 1+r.Intn(40), 1+r.Intn(300)
			for m*n*k > ynnSmallWork {
				k = 1 + k/2
			}
		}
		nb := 1 + r.Intn(300)
		if it%40 == 0 {
			nb = 2000 + r.Intn(2000)
		}
		special := it%3 != 0
		nan := it%5 == 0
		a := make([]float32, nb*m*k)
		b := make([]float32, nb*k*n)
		for i := range a {
			a[i] = float32(r.NormFloat64())
			if special {
				a[i] = tinyValue(r, nan)
			}
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
			if special {
				b[i] = tinyValue(r, nan)
			}
		}
		la := rowMajor(m, k)
		if r.Intn(4) == 0 {
			la = colMajor(m, k)
		}
		packB := r.Intn(2) == 0
		lb := rowMajor(k, n)
		if packB {
			lb = colMajor(k, n)
		}
		y := &ynnDot{tasks: ynnPlanF32(m, n, k, r.Intn(3) != 0, packB), kn: kn}
		par := 1 + r.Intn(3)
		want := make([]float32, nb*m*n)
		got := make([]float32, nb*m*n)
		for i := range got {
			got[i] = float32(math.NaN())
		}
		y.runGeneral(par, nb, m, n, k, a, la, b, lb, want)
		for _, scalar := range []bool{false, true} {
			ynnTinyScalar = scalar
			ok := y.runTiny(par, nb, m, n, k, a, la, b, lb, got)
			ynnTinyScalar = false
			if !ok {
				break
			}
			ran++
			for i := range want {
				if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
					t.Fatalf("it %d (scalar %v): %d x [%d,%d]x[%d,%d] plan %v element %d: tiny %#x, general %#x", it, scalar, nb, m, k, k, n, y.tasks, i,
						math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
			clear(got)
		}
	}
	if ran < 350 {
		t.Fatalf("only %d of 800 products took the tiny path", ran)
	}
}

// TestFMA32ExactSubnormal checks fma32Exact where fma32's tie test does
// not look: sums in float32's subnormal range, against the exact sum
// rounded with big arithmetic (math/big is exact for these).
func TestFMA32ExactSubnormal(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for it := 0; it < 200000; it++ {
		a := math.Float32frombits(uint32(r.Intn(1<<23)) | uint32(100+r.Intn(20))<<23)
		b := math.Float32frombits(uint32(r.Intn(1<<23)) | uint32(r.Intn(30))<<23)
		c := -math.Float32frombits(uint32(r.Intn(1 << 24)))
		got := fma32Exact(float64(a), float64(b), c)
		if want := fma32Big(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32Exact(%g, %g, %g) = %#x, want %#x", a, b, c, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// fma32Big is a*b+c summed exactly and rounded once to float32.
func fma32Big(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(1000).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(1000).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(1000).SetFloat64(float64(c)))
	f, _ := x.Float32()
	if f == 0 && math.Signbit(float64(c)) && a*b == 0 {
		return c
	}
	return f
}
