//go:build !cgo || !linux || !amd64

package hostlibm

// Without cgo on linux/amd64 there is no libm to call: every function
// reports false and callers use Go's math.

// Available reports whether the functions below call the host's libm.
const Available = false

// Name names the C library, for build reports.
func Name() string { return "none (Go math)" }

// Func is one libm function.
type Func int

// The functions XLA:CPU calls.
const (
	Sin Func = iota
	Cos
	Tan
	Cbrt
	Log
	Erf
	Pow
	Atan2
)

func UnaryF32(f Func, x, o []float32) bool     { return false }
func UnaryF64(f Func, x, o []float64) bool     { return false }
func BinaryF32(f Func, a, b, o []float32) bool { return false }
func BinaryF64(f Func, a, b, o []float64) bool { return false }
