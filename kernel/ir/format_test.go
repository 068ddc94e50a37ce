package ir

import (
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir/irpb"
)

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// lineWith returns the first line of text containing all of parts.
func lineWith(t *testing.T, text string, parts ...string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("no line with %q in\n%s", parts, text)
	return ""
}

func TestFormatStructure(t *testing.T) {
	b := tiledMatmul(256, 1024, 256)
	b.k.Grid = []int64{4}
	text := Format(b.k)
	head := lineWith(t, text, "kernel", `"matmul_tiled"`)
	if !strings.Contains(head, "grid=[4]") || !strings.Contains(head, "schema=1") {
		t.Errorf("header %q", head)
	}
	lineWith(t, text, "t0", `"lhsT"`, "param", "shared_hbm", "bf16[256,256]")
	lineWith(t, text, "t5", "psum", "f32[128,512]")
	lineWith(t, text, "inputs:", "t0(lhsT)", "t1(rhs)")
	lineWith(t, text, "outputs:", "t2(result)")

	outer := lineWith(t, text, "for i0 in affine_range(0, 2):", "# kernel.py:10")
	mid := lineWith(t, text, "for i1 in affine_range(0, 2):", "# kernel.py:11")
	inner := lineWith(t, text, "for i2 in affine_range(0, 2):", "# kernel.py:13")
	dma := lineWith(t, text, "dma", "t1[128*i2 + p, 512*i1 + f]<128x512>")
	mm := lineWith(t, text, "matmul", "accumulate=true")
	cp := lineWith(t, text, "tensor_copy")
	if !(indentOf(outer) < indentOf(mid) && indentOf(mid) < indentOf(inner) && indentOf(inner) < indentOf(mm)) {
		t.Errorf("loops not nested by indentation:\n%s", text)
	}
	if indentOf(dma) != indentOf(mm) || indentOf(cp) != indentOf(inner) {
		t.Errorf("body statements at wrong depth:\n%s", text)
	}
	if !strings.HasSuffix(mm, "# kernel.py:16") || !strings.Contains(mm, "t5[p, f]<128x512> <- t3[p, f]<128x128>, t4[p, f]<128x512>") {
		t.Errorf("matmul line %q", mm)
	}
	// order of statements is the IR's
	if strings.Index(text, "memset t5") > strings.Index(text, "matmul t5") || strings.Index(text, "matmul t5") > strings.Index(text, "tensor_copy t6") {
		t.Errorf("statement order:\n%s", text)
	}
}

func TestFormatMasksAndTerms(t *testing.T) {
	b := newKernel("masked")
	b.k.Grid = []int64{2, 2}
	x := b.sbuf("x", dtype.F32, 128, 4, 8)
	v := b.newVar()
	in := op("iota", 7, accs(tile(x, sh(128, 4, 8), aff(-5, pid(1, -3), lv(v, 2)))), nil, attrs{"s": as("a b"), "z": ai(-2)})
	in.Exprs = []*irpb.Affine{aff(0, ax(2), ax(0))}
	in.Mask = []*irpb.Predicate{
		{Expr: aff(-1000, ax(0), lv(v, 128)), Cmp: irpb.Cmp_LT},
		{Expr: aff(3, ax(1)), Cmp: irpb.Cmp_GE},
		{Expr: aff(0), Cmp: irpb.Cmp_EQ},
	}
	b.add(loop(v, 0, 4, 2, 6, st(in)))
	text := Format(b.k)
	l := lineWith(t, text, "iota")
	for _, want := range []string{
		"t0[-3*pid1 + 2*i0 + p - 5, f1, f2]<128x4x8>",
		`s="a b"`, "z=-2",
		"expr0=(f2 + p)",
		"mask(128*i0 + p < 1000 & f1 >= -3 & 0 == 0)",
		"# kernel.py:7",
	} {
		if !strings.Contains(l, want) {
			t.Errorf("iota line %q lacks %q", l, want)
		}
	}
	lineWith(t, text, "for i0 in affine_range(0, 4, 2):")
}

func TestFormatBrokenIR(t *testing.T) {
	k := &irpb.Kernel{Body: []*irpb.Stmt{{}, {Kind: &irpb.Stmt_Inst{Inst: &irpb.Instruction{Op: "x", Loc: &irpb.Loc{File: 3, Line: 2}, Dst: []*irpb.Access{nil}}}}}}
	text := Format(k)
	lineWith(t, text, "<empty statement>")
	lineWith(t, text, "x <empty access>", "# ?:2")
	if Format(nil) == "" {
		t.Error("nil kernel prints nothing")
	}
}
