package golden

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// Random u64/s64 index expressions (iotas, broadcasts, constants large and
// negative, converts of u32/s32 parameters, a u64 parameter that must block
// the rewrite, +, -, *, bitwise ops, shifts by constants) read through
// converts to u32/s32 of the value and of its high word: the legalized
// module (narrowIndexConvert) against the module evaluated as written.
func TestNarrowIndexConvertMatchesU64(t *testing.T) {
	rng := rand.New(rand.NewSource(64))
	rewrote := 0
	const trials = 150
	for trial := 0; trial < trials; trial++ {
		wide := []string{"u64", "s64"}[trial%2]
		dims := [][]int64{{7, 9}, {3, 4, 5}, {64}, {2, 70000}}[trial%4]
		dd := strings.ReplaceAll(fmt.Sprint(dims), " ", ",")
		sh := wide + dd
		var b strings.Builder
		b.WriteString("HloModule m\nENTRY e {\n")
		fmt.Fprintf(&b, "  p0 = u32%s parameter(0)\n  p1 = s32%s parameter(1)\n  p2 = u64%s parameter(2)\n", dd, dd, dd)
		names := []string{}
		n := 0
		add := func(format string, args ...any) string {
			name := fmt.Sprintf("v%d", n)
			n++
			fmt.Fprintf(&b, "  %s = %s %s\n", name, sh, fmt.Sprintf(format, args...))
			names = append(names, name)
			return name
		}
		konst := func() string {
			c := []string{"0", "1", "3", "4096", "4294967295", "4294967296", "1099511627776", "18446744073709551615"}[rng.Intn(8)]
			if wide == "s64" {
				c = []string{"0", "1", "3", "4096", "4294967295", "4294967296", "-1", "-4294967297"}[rng.Intn(8)]
			}
			k := fmt.Sprintf("k%d", n)
			fmt.Fprintf(&b, "  %s = %s[] constant(%s)\n", k, wide, c)
			return k
		}
		for d := range dims {
			io := fmt.Sprintf("io%d", d)
			fmt.Fprintf(&b, "  %s = %s[%d] iota(), iota_dimension=0\n", io, wide, dims[d])
			add("broadcast(%s), dimensions={%d}", io, d)
		}
		add("iota(), iota_dimension=%d", rng.Intn(len(dims)))
		add("broadcast(%s), dimensions={}", konst())
		if rng.Intn(3) == 0 {
			add("convert(p%d)", rng.Intn(2))
		}
		if rng.Intn(8) == 0 {
			if wide == "u64" {
				add("copy(p2)")
			} else {
				add("convert(p2)")
			}
		}
		pick := func() string { return names[len(names)-1-rng.Intn(min(len(names), 5))] }
		for range 3 + rng.Intn(6) {
			switch k := rng.Intn(12); {
			case k < 6:
				add("%s(%s, %s)", []string{"add", "multiply", "subtract", "and", "or", "xor"}[k], pick(), pick())
			case k < 7:
				add("%s(%s)", []string{"not", "negate"}[rng.Intn(2)], pick())
			case k < 9:
				c := fmt.Sprintf("sc%d", n)
				fmt.Fprintf(&b, "  %s = %s[] constant(%d)\n", c, wide, []int{1, 12, 31, 32, 33, 63, 64, 70}[rng.Intn(8)])
				cb := fmt.Sprintf("scb%d", n)
				fmt.Fprintf(&b, "  %s = %s broadcast(%s), dimensions={}\n", cb, sh, c)
				add("%s(%s, %s)", []string{"shift-left", "shift-right-logical"}[rng.Intn(2)], pick(), cb)
			default:
				// index arithmetic as JAX writes it: row * stride + column
				s := konst()
				sb := fmt.Sprintf("sb%d", n)
				fmt.Fprintf(&b, "  %s = %s broadcast(%s), dimensions={}\n", sb, sh, s)
				m := add("multiply(%s, %s)", names[0], sb)
				add("add(%s, %s)", m, names[min(1, len(names)-1)])
			}
		}
		x := names[len(names)-1]
		c32 := fmt.Sprintf("c32_%d", n)
		fmt.Fprintf(&b, "  %s = %s[] constant(32)\n  %sb = %s broadcast(%s), dimensions={}\n", c32, wide, c32, sh, c32)
		hi := add("shift-right-logical(%s, %sb)", x, c32)
		fmt.Fprintf(&b, "  lo32 = u32%s convert(%s)\n  los = s32%s convert(%s)\n  hi32 = u32%s convert(%s)\n", dd, x, dd, x, dd, hi)
		fmt.Fprintf(&b, "  ROOT t = (u32%s, s32%s, u32%s) tuple(lo32, los, hi32)\n}\n", dd, dd, dd)
		src := b.String()
		m, err := hlo.ParseText([]byte(src), "t.hlo")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		var args []*tensor.Tensor
		for _, et := range []dtype.Type{dtype.U32, dtype.S32, dtype.U64} {
			a := tensor.New(et, dims)
			for i := range a.Data {
				a.Data[i] = byte(rng.Intn(256))
			}
			args = append(args, a)
		}
		var vs []eval.Value
		for _, a := range args {
			vs = append(vs, eval.ArrayValue(a))
		}
		want, err := eval.New(m, eval.Options{}).Run(vs)
		if err != nil {
			t.Fatalf("as written: %v\n%s", err, src)
		}
		got, err := Run(m, args, Options{})
		if err != nil {
			t.Fatalf("legalized: %v\n%s", err, src)
		}
		wl := want.Leaves()
		for i, g := range got.Outputs {
			if string(g.Data) != string(wl[i].Data) {
				t.Fatalf("output %d differs\n%s", i, src)
			}
		}
		lm, err := legalize(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if lm.Entry.Root.Operands[0].Opcode != "convert" { // lo32 became 32-bit arithmetic
			rewrote++
		}
	}
	t.Logf("%d of %d modules narrowed", rewrote, trials)
	if rewrote < trials/3 {
		t.Errorf("only %d of %d modules were narrowed", rewrote, trials)
	}
}
