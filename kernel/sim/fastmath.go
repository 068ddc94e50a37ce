package sim

import "math"

// exp2Table[j] = 2^(j/32), rounded to float64.
var exp2Table = func() (t [32]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 32)
	}
	return
}()

// expF32 is exp of a float32 input computed in float64 and returned for
// rounding to float32 by the caller: x = (32m + j)·ln2/32 + r with
// |r| <= ln2/64 (ln2/32 split in two parts), exp(x) = 2^m · 2^(j/32) ·
// p(r), p the degree-6 Taylor polynomial (truncation ~2e-17). The relative
// error (~1e-16) makes the float32 result the correctly rounded one except
// within ~1e-16 of a rounding boundary. Pure Go on purpose: math.Exp's
// assembly is slow after AVX-512 code (SSE/AVX transition penalties).
func expF32(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 89:
		return math.Inf(1)
	case x < -105:
		return 0
	}
	const (
		inv   = 32 / math.Ln2
		ln2hi = 6.93147180369123816490e-01 / 32
		ln2lo = 1.90821492927058770002e-10 / 32
	)
	t := x * inv
	var ki int64
	if t >= 0 {
		ki = int64(t + 0.5)
	} else {
		ki = int64(t - 0.5)
	}
	k := float64(ki)
	r := (x - k*ln2hi) - k*ln2lo
	p := 1.0 / 720
	p = p*r + 1.0/120
	p = p*r + 1.0/24
	p = p*r + 1.0/6
	p = p*r + 0.5
	p = p*r + 1
	p = p*r + 1
	return p * exp2Table[ki&31] * math.Float64frombits(uint64((ki>>5)+1023)<<52)
}
