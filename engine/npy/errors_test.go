package npy

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// npyBytes builds a version-1 file from a raw header dict and data.
func npyBytes(dict string, data []byte) []byte {
	b := []byte(magic + "\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(dict)))
	b = append(b, dict...)
	return append(b, data...)
}

// onlyReader hides a reader's length, forcing the chunked data path.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestReadRejectsBadInput(t *testing.T) {
	f4 := func(shape string) string {
		return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n"
	}
	bf16 := &Meta{MLDtype: "bfloat16"}
	cases := []struct {
		name string
		in   []byte
		meta *Meta
		want string
	}{
		{"empty", nil, nil, "reading magic"},
		{"bad magic", []byte("\x93NUMPZ\x01\x00\x00\x00"), nil, "not a .npy file"},
		{"version 4", []byte(magic + "\x04\x00\x00\x00"), nil, "unsupported format version 4.0"},
		{"truncated header", []byte(magic + "\x01\x00\x50\x00{'descr'"), nil, "reading 80-byte header"},
		{"huge v2 header", []byte(magic + "\x02\x00\xff\xff\xff\x7f"), nil, "exceeds the limit"},
		{"bad v3 utf8", append([]byte(magic+"\x03\x00\x02\x00\x00\x00"), 0xff, 0xfe), nil, "not valid UTF-8"},
		{"not a dict", npyBytes("['descr']", nil), nil, "expected '{'"},
		{"missing shape", npyBytes("{'descr': '<f4', 'fortran_order': False}", nil), nil, `missing key "shape"`},
		{"duplicate key", npyBytes("{'descr': '<f4', 'descr': '<f4'}", nil), nil, "duplicate key"},
		{"unknown key", npyBytes("{'descr': '<f4', 'x': 1}", nil), nil, `unexpected key "x"`},
		{"structured", npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", nil), nil, "structured dtypes"},
		{"string dtype", npyBytes("{'descr': '<U3', 'fortran_order': False, 'shape': (1,)}", nil), nil, "unsupported dtype descr"},
		{"object dtype", npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,)}", nil), nil, "unsupported dtype descr"},
		{"negative dim", npyBytes(f4("(-1,)"), nil), nil, "non-negative integer"},
		{"paren int", npyBytes(f4("(3)"), nil), nil, "trailing comma"},
		{"dim overflow", npyBytes(f4("(99999999999999999999,)"), nil), nil, "out of range"},
		{"count overflow", npyBytes(f4("(4294967296, 4294967296, 4294967296)"), nil), nil, "invalid dimensions"},
		{"over MaxElements", npyBytes(f4("(4294967297,)"), nil), nil, "more than the limit"},
		{"short data", npyBytes(f4("(2, 3)"), make([]byte, 23)), nil, "needs 24 bytes of data, the input holds 23"},
		{"long data", npyBytes(f4("(2, 3)"), make([]byte, 25)), nil, "needs 24 bytes of data, the input holds"},
		{"trailing text", npyBytes(f4("(1,)")+"x", make([]byte, 4)), nil, "trailing text"},
		{"void without meta", npyBytes("{'descr': '<V2', 'fortran_order': False, 'shape': (1,)}", make([]byte, 2)), nil, "needs a *.npy.meta sidecar"},
		{"meta size mismatch", npyBytes("{'descr': '|V1', 'fortran_order': False, 'shape': (1,)}", make([]byte, 1)), bf16, "says bfloat16 (2 bytes per element)"},
		{"meta vs plain", npyBytes("{'descr': '<f2', 'fortran_order': False, 'shape': (1,)}", make([]byte, 2)), bf16, `says bfloat16 but the data is "<f2"`},
		{"meta unknown", npyBytes(f4("(1,)"), make([]byte, 4)), &Meta{MLDtype: "float7"}, `unknown ml_dtype "float7"`},
	}
	for _, c := range cases {
		for _, hide := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(c.in)
			if hide {
				r = onlyReader{r}
			}
			_, err := Read(r, c.meta)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (length hidden %v): error %v, want it to contain %q", c.name, hide, err, c.want)
			}
		}
	}
}

// TestReadHugeHeaderShapeNoAlloc: a header promising 4 GiB over a short
// stream of unknown length fails without allocating the promised size.
func TestReadHugeHeaderShapeNoAlloc(t *testing.T) {
	in := npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }", make([]byte, 100))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(onlyReader{bytes.NewReader(in)}, nil)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "the input holds 100") {
		t.Fatalf("error %v", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("allocated %d bytes for a 100-byte input", d)
	}
}

func TestReadSpecialCases(t *testing.T) {
	// Fortran order, big-endian int32 2x3: column-major 0 3 1 4 2 5 is row-major 0..5.
	var data []byte
	for _, v := range []uint32{0, 3, 1, 4, 2, 5} {
		data = binary.BigEndian.AppendUint32(data, v)
	}
	got, err := Read(bytes.NewReader(npyBytes("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }", data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 2, 3, 4, 5}; !slices.Equal(got.I32(), want) {
		t.Errorf("Fortran big-endian read %v, want %v", got.I32(), want)
	}
	// '<f1' is float8_e5m2 without any sidecar; pred bytes normalize to 0/1;
	// int4 keeps only the low bits; Python 2 long dims parse.
	got, err = Read(bytes.NewReader(npyBytes("{'descr': '<f1', 'fortran_order': False, 'shape': (2L,), }", []byte{0x3c, 0xbc})), nil)
	if err != nil || got.Type != dtype.F8E5M2 {
		t.Fatalf("<f1: %v %v", got, err)
	}
	got, err = Read(bytes.NewReader(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", []byte{0, 2, 255})), nil)
	if err != nil || !slices.Equal(got.Data, []byte{0, 1, 1}) {
		t.Errorf("bool normalize: %v %v", got, err)
	}
	got, err = Read(bytes.NewReader(npyBytes("{'descr': '|V1', 'fortran_order': False, 'shape': (2,), }", []byte{0xff, 0x17})), &Meta{MLDtype: "int4"})
	if err != nil || !slices.Equal(got.Data, []byte{0x0f, 0x07}) {
		t.Errorf("int4 mask: %v %v", got, err)
	}
}

func TestParseMeta(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{`{"ml_dtype": "bfloat16"}`, "bfloat16", ""},
		{`{"ml_dtype": "float8_e4m3fn", "version": 2}`, "float8_e4m3fn", ""},
		{`{"ml_dtype": "int4"}` + "\n", "int4", ""},
		{`{}`, "", "missing"},
		{`{"ml_dtype": 3}`, "", "not a string"},
		{`{"ml_dtype": "bf16"}`, "", "unknown ml_dtype"},
		{`["bfloat16"]`, "", "not a JSON object"},
		{``, "", "not a JSON object"},
	} {
		m, err := ParseMeta([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseMeta(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || m.MLDtype != c.want {
			t.Errorf("ParseMeta(%q) = %v, %v", c.in, m, err)
		}
	}
}

func FuzzReadNPY(f *testing.F) {
	for _, ty := range []dtype.Type{dtype.F32, dtype.BF16, dtype.S4, dtype.C128, dtype.Pred} {
		var b bytes.Buffer
		if err := Write(&b, sampleTensor(ty, []int64{2, 3})); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes(), ty.NumpyName())
	}
	f.Add(npyBytes("{'descr': '>c8', 'fortran_order': True, 'shape': (2, 2), }", make([]byte, 32)), "")
	f.Add(append([]byte(magic+"\x03\x00\x3c\x00\x00\x00"), "{'descr': '<f1', 'fortran_order': False, 'shape': (3,), }  \n\x01\x02\x03"...), "")
	f.Fuzz(func(t *testing.T, in []byte, mlDtype string) {
		var meta *Meta
		if mlDtype != "" {
			meta = &Meta{MLDtype: mlDtype}
		}
		a, errA := Read(bytes.NewReader(in), meta)
		b, errB := Read(onlyReader{bytes.NewReader(in)}, meta)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("known-length and streamed reads disagree: %v vs %v", errA, errB)
		}
		if errA != nil {
			return
		}
		if a.Type != b.Type || !slices.Equal(a.Dims, b.Dims) || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("known-length and streamed reads differ: %v vs %v", a, b)
		}
		var w bytes.Buffer
		if err := Write(&w, a); err != nil {
			t.Fatalf("writing what we read: %v", err)
		}
		m, _ := MetaFor(a.Type)
		var mp *Meta
		if m.MLDtype != "" {
			mp = &m
		}
		c, err := Read(&w, mp)
		if err != nil {
			t.Fatalf("re-reading what we wrote: %v", err)
		}
		if c.Type != a.Type || !slices.Equal(c.Dims, a.Dims) || !bytes.Equal(c.Data, a.Data) {
			t.Fatalf("round trip changed %v into %v", a, c)
		}
		_ = tensor.MaxElements
	})
}

func FuzzParseMeta(f *testing.F) {
	for _, s := range []string{`{"ml_dtype": "bfloat16"}`, `{"ml_dtype": "uint1", "x": [1]}`, `{"ml_dtype": null}`, `{}`, `[]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseMeta(in)
		if err != nil {
			return
		}
		ty, err := m.Type()
		if err != nil || !ty.IsArray() {
			t.Fatalf("ParseMeta accepted %q but Type fails: %v", in, err)
		}
		again, err := ParseMeta(m.encode())
		if err != nil || again != m {
			t.Fatalf("encode/parse round trip: %v -> %v, %v", m, again, err)
		}
	})
}
