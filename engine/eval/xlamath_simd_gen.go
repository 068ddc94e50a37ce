//go:build ignore

// xlamath_simd_gen writes xlamath_simd_kernels_amd64.go: the simd/archsimd
// versions of xlamath.go's f32 kernels, once per vector width (16 lanes on
// AVX-512, 8 on AVX2+FMA) from one template, so the two widths cannot drift
// apart.
//
// The template follows xlamath.go step by step: a MulAdd exactly where the
// scalar code calls fma32 (or hornerLanes), a plain Mul/Add/Div where it
// writes one, the same constants (the polynomial tables are xlamath.go's own
// vars, broadcast once per call) and every branch as a compare and a blend.
// Two places need care beyond a literal translation:
//   - VMINPS/VMAXPS do not propagate NaN the way Go's min and max do (and
//     the compiler may swap their operands), so a clamp whose NaN matters is
//     followed by a blend that puts the NaN back.
//   - Negation flips the sign bit (as Go's -x does) rather than computing
//     0-x, which would turn -0 into +0.
//
// x.Merge(y, m) is x where m holds, else y. Where several of the scalar
// code's cases apply to one lane, the blends run from the last case to the
// first, so the first case wins as it does there.
//
// Run with: go run xlamath_simd_gen.go
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"
	"text/template"
)

// width is one vector shape and the spelling of its operations.
type width struct {
	Suffix  string // of the generated function names
	N       int    // lanes
	F, I, U string // float, int and uint vector types
	Floor   string // method rounding toward -inf
}

var widths = []width{
	{"X16", 16, "Float32x16", "Int32x16", "Uint32x16", "FloorScaled(0)"},
	{"X8", 8, "Float32x8", "Int32x8", "Uint32x8", "Floor()"},
}

// op is one kernel: consts runs once per call, body once per vector with the
// input in v, leaving the result in res.
type op struct {
	name, opcode, doc string
	consts, body      string
	// only, when set, is the one width (Suffix) to generate: for kernels
	// whose instructions exist at that width alone.
	only string
}

// Shared pieces: exp and logistic share exp's core, log1p runs log's core
// on 1+x.
const (
	expConsts = `
	expHi, expLo := {{bc "88.8"}}, {{bc "-87.8"}}
	log2e, half := {{bc "0x1.715476p+0"}}, {{bc "0.5"}}
	kHi, kLo := {{bc "127"}}, {{bc "-127"}}
	ln2Hi, ln2Lo := {{bc "-0x1.63p-1"}}, {{bc "0x1.bd0106p-13"}}
	bias := {{bi "127"}}
	one := {{bc "1"}}
	{{poly "ep" "expPoly" 6}}`
	// expCore is expLanes on v: e^v = y * scale.
	expCore = `
		c := v.Min(expHi).Max(expLo)
		c = v.Merge(c, v.IsNaN())
		k := c.MulAdd(log2e, half).{{.Floor}}
		k = k.Min(kHi).Max(kLo)
		r := k.MulAdd(ln2Hi, c)
		r = k.MulAdd(ln2Lo, r)
		scale := k.ConvertToInt32().Add(bias).ShiftAllLeft(23).As{{.F}}()
		{{horner "p" "r" "ep" 6}}
		y := p.MulAdd(r.Mul(r), r).Add(one)`

	logConsts = `
	minNormal, sqrtHalf := {{bc "0x1p-126"}}, {{bc "0x1.6a09e6p-1"}}
	expBias := {{bi "127"}}
	mantMask, halfExp := {{bu "0x807FFFFF"}}, {{bu "0x3F000000"}}
	// The exponent's shift count as a vector (VPSRLVD): ShiftAllRight(23)
	// compiles to a legacy-SSE MOVQ of the count beside 512/256-bit code,
	// an SSE/AVX transition that made log and log1p 20x slower.
	expShift := {{bu "23"}}
	ln2Hi, ln2Lo, negHalf := {{bc "0x1.63p-1"}}, {{bc "-0x1.bd0106p-13"}}, {{bc "-0.5"}}
	zero, one, inf := {{bc "0"}}, {{bc "1"}}, {{bc "float32(math.Inf(1))"}}
	negInf, nan := {{bc "float32(math.Inf(-1))"}}, {{bc "math.Float32frombits(0xFFFFFFFF)"}}
	{{poly "lp0" "logPoly0" 3}}
	{{poly "lp1" "logPoly1" 3}}
	{{poly "lp2" "logPoly2" 3}}`
	// logCore is logLanes on u, into res.
	logCore = `
		w := u.Merge(minNormal, u.Greater(minNormal))
		bits := w.As{{.U}}()
		e := bits.ShiftRight(expShift).As{{.I}}().Sub(expBias).ConvertToFloat32().Add(one)
		m := bits.And(mantMask).Or(halfExp).As{{.F}}()
		z := m.Sub(one)
		lt := m.Less(sqrtHalf)
		e = e.Sub(one).Merge(e, lt)
		z = z.Add(m).Merge(z, lt)
		{{horner "p0" "z" "lp0" 3}}
		{{horner "p1" "z" "lp1" 3}}
		{{horner "p2" "z" "lp2" 3}}
		z2 := z.Mul(z)
		z3 := z2.Mul(z)
		t := p0.MulAdd(z3, p1)
		t = t.MulAdd(z3, p2)
		y := t.MulAdd(z3, e.Mul(ln2Lo))
		y = z2.MulAdd(negHalf, z).Add(y)
		res := e.MulAdd(ln2Hi, y)
		res = u.Merge(res, u.Equal(inf))
		res = res.Merge(nan, u.Greater(zero))
		res = negInf.Merge(res, u.Equal(zero))`
)

var ops = []op{
	{
		name:   "expXLA",
		opcode: "exponential",
		doc:    "is expXLALanes",
		consts: expConsts,
		body: expCore + `
		res := y.Mul(scale)`,
	},
	{
		name:   "logisticXLA",
		opcode: "logistic",
		doc:    "is logisticLanes",
		consts: expConsts + `
	signBit := {{bu "0x80000000"}}`,
		body: `
		v = v.As{{.U}}().Xor(signBit).As{{.F}}()` + expCore + `
		res := one.Div(y.MulAdd(scale, one))`,
	},
	{
		name:   "tanhXLA",
		opcode: "tanh",
		doc:    "is tanhLanes; a NaN lost in the clamp comes back with the |x| < 4e-4 blend, which NaN fails",
		consts: `
	clampHi, clampLo := {{bc "0x1.ffec88p+2"}}, {{bc "-0x1.ffec88p+2"}}
	small, big := {{bc "4e-4"}}, {{bc "20"}}
	absMask, signBit := {{bu "0x7FFFFFFF"}}, {{bu "0x80000000"}}
	oneBits := {{bu "0x3F800000"}}
	{{poly "tn" "tanhNum" 7}}
	{{poly "td" "tanhDen" 4}}`,
		body: `
		c := v.Min(clampHi).Max(clampLo)
		c2 := c.Mul(c)
		{{horner "p" "c2" "tn" 7}}
		{{horner "q" "c2" "td" 4}}
		res := c.Mul(p).Div(q)
		vb := v.As{{.U}}()
		ax := vb.And(absMask).As{{.F}}()
		res = res.Merge(v, ax.GreaterEqual(small))
		sign1 := vb.And(signBit).Or(oneBits).As{{.F}}()
		res = sign1.Merge(res, ax.GreaterEqual(big))`,
	},
	{
		name:   "erfXLA",
		opcode: "erf",
		doc:    "is erfLanes",
		consts: `
	clamp := {{bc "erfClamp"}}
	absMask, signBit := {{bu "0x7FFFFFFF"}}, {{bu "0x80000000"}}
	oneBits := {{bu "0x3F800000"}}
	{{poly "en" "erfNum" 5}}
	{{poly "ed" "erfDen" 7}}`,
		body: `
		x2 := v.Mul(v)
		{{horner "p" "x2" "en" 5}}
		{{horner "q" "x2" "ed" 7}}
		res := v.Mul(p).Div(q)
		vb := v.As{{.U}}()
		ax := vb.And(absMask).As{{.F}}()
		sign1 := vb.And(signBit).Or(oneBits).As{{.F}}()
		res = sign1.Merge(res, ax.GreaterEqual(clamp))`,
	},
	{
		name:   "logXLA",
		opcode: "log",
		doc:    "is logLanes",
		consts: logConsts,
		body: `
		u := v` + logCore,
	},
	{
		name:   "log1pXLA",
		opcode: "log-plus-one",
		doc:    "is log1pLanes",
		consts: logConsts + `
	absMask := {{bu "0x7FFFFFFF"}}
	smallX := {{bc "0x1.a8279ap-2"}}
	{{poly "ln" "log1pNum" 7}}
	{{poly "ld" "log1pDen" 7}}`,
		body: `
		u := v.Add(one)` + logCore + `
		{{horner "pn" "v" "ln" 7}}
		{{horner "pd" "v" "ld" 7}}
		x2 := v.Mul(v)
		rat := v.Mul(x2).Mul(pd.Div(pn))
		s := v.Add(x2.MulAdd(negHalf, rat))
		ax := v.As{{.U}}().And(absMask).As{{.F}}()
		res = s.Merge(res, ax.Less(smallX))`,
	},
	{
		// rsqrt is only 8 lanes wide: XLA:CPU starts from VRSQRTSS or
		// 256-bit VRSQRTPS (the same 12-bit estimate table), never from
		// AVX-512's VRSQRT14PS, which Float32x16.ReciprocalSqrt would be.
		// The estimate table is the CPU's own, so this has no scalar twin
		// and is not in the opcode maps: xlamath_simd_amd64.go runs it, tail
		// included.
		name: "rsqrtXLA",
		doc:  "is XLA:CPU's f32 rsqrt (xlaRsqrt)",
		only: "X8",
		consts: `
	negHalf, negOne := {{bc "-0.5"}}, {{bc "-1"}}
	minNormal, inf := {{bc "0x1p-126"}}, {{bc "float32(math.Inf(1))"}}`,
		body: `
		// Newton steps r = fma(-r/2, fma(x*r, r, -1), r), as XLA:CPU's
		// rsqrt intrinsic emits them (fmul/fadd pairs LLVM contracts).
		y := v.ReciprocalSqrt()
		r := y
		for range rsqrtNewtonSteps {
			a := v.Mul(r)
			c := a.MulAdd(r, negOne)
			r = r.Mul(negHalf).MulAdd(c, r)
		}
		res := r.Merge(y, v.GreaterEqual(minNormal).And(v.Less(inf)))`,
	},
}

const loop = `
// {{.Name}} {{.Doc}} on {{.W.N}} lanes at a time. It handles the whole
// vectors at the front of x and returns how many elements that was.
func {{.Name}}(x, o []float32) int {
	n := len(x) &^ {{.W.N | minus1}}
	o = o[:len(x)]
	if n == 0 {
		return 0
	}
	px, po := f32Base(x, n), f32Base(o, n){{.Consts}}
	for off, end := 0, 4*n; off < end; off += 4 * {{.W.N}} {
		v := load{{.W.F}}(px, off){{.Body}}
		store{{.W.F}}(res, po, off)
	}
	archsimd.ClearAVXUpperBits() // the caller's scalar SSE code runs next
	return n
}
`

func main() {
	var w bytes.Buffer
	fmt.Fprint(&w, `// Code generated by xlamath_simd_gen.go; DO NOT EDIT.

//go:build goexperiment.simd && amd64

package eval

import (
	"math"
	"simd/archsimd"
)

// The polynomial tables must have the lengths the kernels unroll.
var (
	_ = [1]int{}[len(tanhNum)-7]
	_ = [1]int{}[len(tanhDen)-4]
	_ = [1]int{}[len(expPoly)-6]
	_ = [1]int{}[len(logPoly0)-3]
	_ = [1]int{}[len(logPoly1)-3]
	_ = [1]int{}[len(logPoly2)-3]
	_ = [1]int{}[len(log1pNum)-7]
	_ = [1]int{}[len(log1pDen)-7]
	_ = [1]int{}[len(erfNum)-5]
	_ = [1]int{}[len(erfDen)-7]
)
`)
	loopT := template.Must(template.New("loop").Funcs(template.FuncMap{
		"minus1": func(n int) int { return n - 1 },
	}).Parse(loop))
	for _, o := range ops {
		for _, wd := range widths {
			if o.only != "" && o.only != wd.Suffix {
				continue
			}
			// The kernel's constants are loaded from a table of splatted
			// vectors (one 512/256-bit load each) rather than broadcast from
			// scalars: the compiler moves a scalar float with a legacy-SSE
			// MOVSS/MOVUPS, and each one beside dirty 512/256-bit state is an
			// SSE/AVX transition (a kernel's 30-odd constants cost as much as
			// its loop over a fused block of 2048 elements).
			table := o.name + wd.Suffix + "K"
			var kvals []string
			konst := func(bits, as string) string {
				idx := len(kvals)
				kvals = append(kvals, bits)
				load := fmt.Sprintf("archsimd.Load%s(&%s[%d])", wd.U, table, idx)
				if as != "" {
					load += "." + as
				}
				return load
			}
			funcs := template.FuncMap{
				"bc": func(c string) string { return konst(fmt.Sprintf("math.Float32bits(%s)", c), "As"+wd.F+"()") },
				"bi": func(c string) string { return konst(fmt.Sprintf("uint32(%s)", c), "As"+wd.I+"()") },
				"bu": func(c string) string { return konst(c, "") },
				"poly": func(name, table string, n int) string {
					var b strings.Builder
					for i := range n {
						fmt.Fprintf(&b, "\n\t%s%d := %s", name, i, konst(fmt.Sprintf("math.Float32bits(%s[%d])", table, i), "As"+wd.F+"()"))
					}
					return b.String()
				},
				// horner is hornerLanes: one MulAdd per coefficient after the first.
				"horner": func(p, x, name string, n int) string {
					var b strings.Builder
					fmt.Fprintf(&b, "%s := %s0.MulAdd(%s, %s1)", p, name, x, name)
					for i := 2; i < n; i++ {
						fmt.Fprintf(&b, "\n\t\t%s = %s.MulAdd(%s, %s%d)", p, p, x, name, i)
					}
					return b.String()
				},
			}
			expand := func(s string) string {
				var b bytes.Buffer
				t := template.Must(template.New(o.name).Funcs(funcs).Parse(s))
				if err := t.Execute(&b, wd); err != nil {
					log.Fatal(err)
				}
				return b.String()
			}
			err := loopT.Execute(&w, map[string]any{
				"Name": o.name + wd.Suffix, "Doc": o.doc, "W": wd,
				"Consts": expand(o.consts), "Body": expand(o.body),
			})
			if err != nil {
				log.Fatal(err)
			}
			fmt.Fprintf(&w, "\nvar %s = [...][%d]uint32{\n", table, wd.N)
			for _, k := range kvals {
				fmt.Fprintf(&w, "\tsplat%s(%s),\n", wd.Suffix, k)
			}
			fmt.Fprint(&w, "}\n")
		}
	}
	for _, wd := range widths {
		fmt.Fprintf(&w, "\n// splat%s is a vector of %d lanes of bits.\n", wd.Suffix, wd.N)
		fmt.Fprintf(&w, "func splat%s(bits uint32) (v [%d]uint32) {\n\tfor i := range v {\n\t\tv[i] = bits\n\t}\n\treturn v\n}\n", wd.Suffix, wd.N)
	}
	for _, wd := range widths {
		fmt.Fprintf(&w, "\n// xlaVectorOps%s maps opcodes to their %d-lane kernels.\n", wd.Suffix, wd.N)
		fmt.Fprintf(&w, "var xlaVectorOps%s = map[string]func(x, o []float32) int{\n", wd.Suffix)
		for _, o := range ops {
			if o.opcode != "" {
				fmt.Fprintf(&w, "\t%q: %s%s,\n", o.opcode, o.name, wd.Suffix)
			}
		}
		fmt.Fprint(&w, "}\n")
	}
	src, err := format.Source(w.Bytes())
	if err != nil {
		os.WriteFile("xlamath_simd_kernels_amd64.go.broken", w.Bytes(), 0o644)
		log.Fatal(err)
	}
	if err := os.WriteFile("xlamath_simd_kernels_amd64.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
