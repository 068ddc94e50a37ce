package hlo

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// FuzzParseText checks that arbitrary input never panics or hangs the parser,
// and that whatever parses also verifies without panicking and round-trips
// through the printer.
func FuzzParseText(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.hlo")
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if len(src) < 32<<10 { // big seeds make each mutation slow
			f.Add(src)
		}
	}
	for _, s := range []string{
		"HloModule m\nENTRY e {\n  ROOT c = f32[2,2]{0,1} constant({{1, nan(0x3)}, {-inf, 1e-45}})\n}\n",
		"HloModule m\ne {\n  p = (s32[], f32[<=3]) parameter(0)\n  ROOT g = get-tuple-element(p), index=1\n}\n",
		"HloModule m, num_partitions=8\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[4] parameter(0)\n  r = f32[4] all-reduce(p), channel_id=1, replica_groups=mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'x':(1)2,'y'}, use_global_device_ids=true, to_apply=add\n  ROOT c = pred[4] compare(r, p), direction=LT, order=TOTAL\n}\n",
		"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] all-reduce(p), replica_groups=mesh[x=2,y=2] {y}, to_apply=e\n}\n",
		"HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\nENTRY e (p: f32[2]) -> f32[2] {\n  p = f32[2]{0:T(2)E(32)} parameter(0)\n  ROOT r = f32[2] add(p, f32[2] negate(p)), metadata={op_name=\"a\" x=1}\n}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := ParseText(src, "fuzz")
		if err != nil {
			return
		}
		_ = Verify(m)
		text := Print(m)
		m2, err := ParseText([]byte(text), "printed")
		if err != nil {
			t.Fatalf("printed module does not parse: %v\n%s", err, text)
		}
		if ok, d := Equal(m, m2); !ok {
			t.Fatalf("printed module differs: %s\n%s", d, text)
		}
	})
}

var nameRef = regexp.MustCompile(`%([A-Za-z_][A-Za-z0-9_.\-]*)`)

// largeModule builds an optimized module of at least size bytes by repeating
// the computations of an XLA:CPU-optimized transformer layer under new names.
func largeModule(tb testing.TB, size int) []byte {
	src, err := os.ReadFile("testdata/transformer_layer.opt.hlo")
	if err != nil {
		tb.Fatal(err)
	}
	i := bytes.Index(src, []byte("\n%"))
	header, body := src[:i+1], src[i+1:]
	body = bytes.ReplaceAll(body, []byte("ENTRY "), nil)
	var b bytes.Buffer
	b.Write(header)
	for k := 0; b.Len() < size; k++ {
		suffix := []byte("_r" + strconv.Itoa(k))
		b.Write(nameRef.ReplaceAllFunc(body, func(m []byte) []byte { return append(append([]byte{}, m...), suffix...) }))
	}
	return b.Bytes()
}

func BenchmarkParseLarge(b *testing.B) {
	src := largeModule(b, 5<<20)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for range b.N {
		if _, err := ParseText(src, "large"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLargeModule(t *testing.T) {
	src := largeModule(t, 1<<20)
	m, err := ParseText(src, "large")
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
}
