package sim

// rngState is a program instance's random generator: SplitMix64 (Steele,
// Lea, Flood 2014) over a 64-bit state. Instance i starts from state
// 0x9E3779B97F4A7C15*(i+1); random_seed sets the state from the seed value.
// Uniform floats take the top 24 bits: u = (x >> 40) * 2^-24 in [0, 1).
type rngState struct{ s uint64 }

func newRNG(instance uint64) *rngState { return &rngState{s: 0x9E3779B97F4A7C15 * (instance + 1)} }

func (r *rngState) seed(v uint64) { r.s = v*0xD1B54A32D192ED03 + 0x9E3779B97F4A7C15 }

func (r *rngState) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// uniform returns a float32-exact value in [0, 1).
func (r *rngState) uniform() float64 { return float64(r.next()>>40) * (1.0 / (1 << 24)) }
