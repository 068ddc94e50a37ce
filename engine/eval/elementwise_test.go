package eval

import (
	"fmt"
	"math"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// elementwiseCase is one entry of the manifest gen_elementwise.py writes.
type elementwiseCase struct {
	jaxCase
	Mode   string   // "exact" or "approx"
	Labels []string // names of the outputs of a grouped program
}

// TestElementwiseAgainstJax evaluates programs jax builds for every
// elementwise op and dtype and compares with jax.jit on CPU: bit-exact
// (any NaN matches any NaN) for exact ops, within a few ulp for
// transcendental math.
func TestElementwiseAgainstJax(t *testing.T) {
	if testing.Short() {
		t.Skip("generates references with jax")
	}
	dir := genJaxCases(t, "gen_elementwise.py")
	cases := readManifest[elementwiseCase](t, dir)
	requireCases(t, cases, 110)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runElementwiseCase(t, dir, c) })
	}
}

func runElementwiseCase(t *testing.T, dir string, c elementwiseCase) {
	got, want := evalJaxCase(t, dir, c.jaxCase)
	var inType dtype.Type
	if len(c.Inputs) > 0 {
		x, err := loadJaxArray(dir, c.Inputs[0])
		if err != nil {
			t.Fatal(err)
		}
		inType = x.Type
	}
	for i := range want {
		label := fmt.Sprint(i)
		if i < len(c.Labels) {
			label = c.Labels[i]
		}
		if err := compareElementwiseOp(got[i], want[i], c.Mode == "approx", inType, label); err != nil {
			t.Errorf("output %s: %v", label, err)
		}
	}
}

// ulpTolerance is the relative tolerance of transcendental results computed
// in type t: a few ulp of t (computing in f32 then rounding to a narrow type
// can land one ulp of that type away from XLA's).
func ulpTolerance(t dtype.Type) float64 {
	switch t {
	case dtype.F64, dtype.C128:
		return 64 * 0x1p-52
	case dtype.F32, dtype.C64:
		return 8 * 0x1p-23
	case dtype.F16:
		return 0x1p-10
	case dtype.BF16:
		return 0x1p-7
	}
	return 0 // 8-bit floats: computed in f32 and rounded once, so held exactly
}

// wideOpTolerance lists the ops whose XLA:CPU kernels are measurably less
// accurate than the type's default: complex64 pow is exp(y*log(x)) with
// three f32 roundings the magnitude of y*log(x) amplifies (9 ulp measured
// here). (f64 log1p, sinh, cosh and atanh, 73-249 ulp from the true values,
// are XLA's own kernels, reproduced: xlamath64.go.) Relative tolerance, by
// op and input type.
var wideOpTolerance = map[string]map[dtype.Type]float64{
	"pow": {dtype.C64: 64 * 0x1p-23},
}

// compareElementwiseOp is compareElementwise with op's tolerance.
func compareElementwiseOp(got, want *tensor.Tensor, approx bool, inType dtype.Type, op string) error {
	tol := ulpTolerance(inType)
	if w, ok := wideOpTolerance[op][inType]; ok {
		tol = w
	}
	return compareElementwiseTol(got, want, approx, tol)
}

// compareElementwiseTol checks got against want. Exact mode compares bits,
// but any NaN matches any NaN (XLA's payloads are not part of the
// contract). Approx mode allows a relative error of tol, with no absolute
// floor: a subnormal or zero result must match exactly (sign included), and
// an infinity must be the same infinity.
func compareElementwiseTol(got, want *tensor.Tensor, approx bool, tol float64) error {
	if got.Type != want.Type || !equalDims(got.Dims, want.Dims) {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	isFloat := want.Type.IsFloat() || want.Type.IsComplex()
	if !isFloat {
		approx = false
	}
	if !isFloat || !approx {
		es := int64(want.Type.Size())
		var gv, wv []float64
		if isFloat {
			gv, wv = flatF64(got), flatF64(want)
		}
		bad, first := 0, ""
		for i := int64(0); i < want.NumElements(); i++ {
			g, w := got.Data[i*es:(i+1)*es], want.Data[i*es:(i+1)*es]
			if string(g) == string(w) {
				continue
			}
			if isFloat && nanMatch(gv, wv, i, want.Type.IsComplex()) {
				continue
			}
			if bad == 0 {
				first = fmt.Sprintf("element %d: got %x (%v), want %x (%v)", i, g, elemF64(got, i), w, elemF64(want, i))
			}
			bad++
		}
		if bad > 0 {
			return fmt.Errorf("%d of %d elements differ; %s", bad, want.NumElements(), first)
		}
		return nil
	}
	gv, wv := flatF64(got), flatF64(want)
	bad, first := 0, ""
	for i := range wv {
		g, w := gv[i], wv[i]
		ok := (math.IsNaN(g) && math.IsNaN(w)) || (g == w && math.Signbit(g) == math.Signbit(w)) ||
			math.Abs(g-w) <= tol*math.Abs(w)
		if !ok {
			if bad == 0 {
				first = fmt.Sprintf("value %d: got %v, want %v", i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d values out of tolerance %g; %s", bad, len(wv), tol, first)
	}
	return nil
}

func nanMatch(gv, wv []float64, i int64, complexPair bool) bool {
	if complexPair {
		for _, k := range []int64{2 * i, 2*i + 1} {
			if !(gv[k] == wv[k] && math.Signbit(gv[k]) == math.Signbit(wv[k])) && !(math.IsNaN(gv[k]) && math.IsNaN(wv[k])) {
				return false
			}
		}
		return true
	}
	return math.IsNaN(gv[i]) && math.IsNaN(wv[i])
}
