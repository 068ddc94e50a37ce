package npy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"codeberg.org/sbinet/npyio/npy"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"

	"goldtrace/internal/pyref"
)

func needPython(t *testing.T) {
	t.Helper()
	pyref.Require(t, "numpy", "ml_dtypes")
}

func runPython(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	cmd := pyref.Command(append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return out
}

// numpyWriter writes .npy files with numpy (np.lib.format.write_array and
// np.save) for every dtype, version, order and byte order, and prints a JSON
// manifest: file, how to read it (meta sidecar or forced type), the expected
// ml_dtypes/numpy name, shape and row-major little-endian bytes (hex).
const numpyWriter = `
import sys, os, json, numpy as np, ml_dtypes as m
d = sys.argv[1]
plain = ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64',
         'float16', 'float32', 'float64', 'complex64', 'complex128']
mld = ['bfloat16', 'float8_e5m2', 'float8_e4m3', 'float8_e4m3fn', 'float8_e4m3b11fnuz',
       'float8_e3m4', 'float8_e5m2fnuz', 'float8_e4m3fnuz', 'float8_e8m0fnu', 'float4_e2m1fn',
       'int4', 'uint4', 'int2', 'uint2', 'int1', 'uint1']
shapes = [(2, 3, 4), (5,), (), (0, 3), (3, 1, 2)]
def values(name, shape):
    n = int(np.prod(shape))
    a = np.arange(n, dtype=np.float64)
    if name == 'bool': v = (a % 3 == 1)
    elif name.startswith('complex'): v = (a * 0.5 - 3) + 1j * (a - 1.25)
    elif name in ('int1',): v = (a % 2) - 1
    elif name.startswith('int') and name[3:] in ('2', '4'): b = int(name[3:]); v = a % (1 << b) - (1 << (b - 1))
    elif name.startswith('uint') and name[4:] in ('1', '2', '4'): v = a % (1 << int(name[4:]))
    elif name.startswith('int') or name.startswith('uint'): v = a * 37 - 100 if name.startswith('int') else a * 37
    elif name == 'float8_e8m0fnu': v = np.exp2(a % 20 - 10)
    else: v = (a * 0.25 - 2.5) % 7 - 3
    T = getattr(m, name) if name in mld else np.dtype(name)
    return np.asarray(v).astype(T).reshape(shape)
def raw(arr):
    c = np.ascontiguousarray(arr)
    if c.dtype.itemsize > 1 and c.dtype.byteorder == '>':
        c = c.astype(c.dtype.newbyteorder('<'))
    return c.tobytes().hex()
out = []
k = 0
for name in plain + mld:
    for shape in shapes:
        for ver in (1, 2, 3):
            for order in ('C', 'F'):
                arr = values(name, shape)
                variants = []
                if name in plain:
                    variants.append(('plain', arr))
                    if arr.dtype.itemsize > 1:
                        variants.append(('be', arr.astype(arr.dtype.newbyteorder('>'))))
                else:
                    view = np.uint16 if arr.dtype.itemsize == 2 else np.uint8
                    variants += [('view_meta', arr.view(view)), ('save_meta', arr), ('save_forced', arr)]
                for kind, a in variants:
                    if order == 'F':
                        a = np.asfortranarray(a)
                    k += 1
                    f = os.path.join(d, 'f%d.npy' % k)
                    with open(f, 'wb') as fh:
                        np.lib.format.write_array(fh, a, version=(ver, 0))
                    if kind.endswith('_meta'):
                        with open(f + '.meta', 'w') as fh:
                            json.dump({'ml_dtype': name}, fh)
                    # asfortranarray makes 0-d arrays 1-d: expect what was written.
                    out.append({'file': f, 'name': name, 'shape': list(a.shape), 'kind': kind,
                                'ver': ver, 'order': order, 'hex': raw(arr.reshape(a.shape))})
# np.save itself (float8_e5m2 comes out as '<f1').
for name in mld:
    k += 1
    f = os.path.join(d, 'f%d.npy' % k)
    arr = values(name, (2, 3))
    np.save(f, arr)
    out.append({'file': f, 'name': name, 'shape': [2, 3], 'kind': 'save_forced', 'ver': 1, 'order': 'C', 'hex': raw(arr)})
print(json.dumps(out))
`

type manifestEntry struct {
	File, Name, Kind, Order, Hex string
	Shape                        []int64
	Ver                          int
}

// TestReadNumpyFiles reads what numpy wrote, in every dtype, format version,
// memory order and byte order, with and without sidecars.
func TestReadNumpyFiles(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	var entries []manifestEntry
	if err := json.Unmarshal(runPython(t, numpyWriter, dir), &entries); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		want, ok := dtype.FromNumpy(e.Name)
		if !ok {
			t.Fatalf("unknown dtype %q", e.Name)
		}
		var got *tensor.Tensor
		var err error
		if e.Kind == "save_forced" {
			got, err = ReadFileAs(e.File, want)
		} else {
			got, err = ReadFile(e.File)
		}
		what := e.Name + " " + e.Kind + " v" + string(rune('0'+e.Ver)) + " " + e.Order
		if err != nil {
			t.Errorf("%s %v: %v", what, e.Shape, err)
			continue
		}
		if got.Type != want || !slices.Equal(got.Dims, e.Shape) {
			t.Errorf("%s: got %v, want %v", what, got, tensor.ShapeString(want, e.Shape))
			continue
		}
		if h := hex.EncodeToString(got.Data); h != e.Hex {
			t.Errorf("%s %v: data\n got %s\nwant %s", what, e.Shape, h, e.Hex)
		}
		seen[e.Kind+"/"+e.Order] = true
	}
	t.Logf("%d numpy-written files read; variants %v", len(entries), seen)
}

// sampleTensor builds a tensor of type ty with varied, type-valid values.
func sampleTensor(ty dtype.Type, dims []int64) *tensor.Tensor {
	out := tensor.New(ty, dims)
	n := int(out.NumElements())
	size := ty.Size()
	for i := range n {
		var bits uint64
		switch {
		case ty.IsFloat():
			bits = dtype.FromF64(ty, float64(i%13)*0.75-4)
			if ty == dtype.F8E8M0FNU {
				bits = uint64(120 + i%15)
			}
		case ty.IsComplex():
			for c := range 2 {
				x := float64(i)*0.5 - float64(c)*3
				half := size / 2
				b := dtype.FromF64(map[int]dtype.Type{4: dtype.F32, 8: dtype.F64}[half], x)
				for k := range half {
					out.Data[i*size+c*half+k] = byte(b >> (8 * k))
				}
			}
			continue
		default:
			bits = dtype.EncodeInt(ty, int64(i*7-11))
		}
		for k := range size {
			out.Data[i*size+k] = byte(bits >> (8 * k))
		}
	}
	return out
}

// numpyReader loads each file with np.load (viewing it as the sidecar's
// ml_dtypes type) and prints name, shape and bytes.
const numpyReader = `
import sys, os, json, numpy as np, ml_dtypes as m
out = {}
for f in sys.argv[1:]:
    a = np.load(f)
    if os.path.exists(f + '.meta'):
        a = a.view(getattr(m, json.load(open(f + '.meta'))['ml_dtype']))
    out[f] = {'name': a.dtype.name, 'shape': list(a.shape), 'hex': np.ascontiguousarray(a).tobytes().hex()}
print(json.dumps(out))
`

// TestWriteReadByNumpy writes every element type with WriteFile and checks
// that numpy + ml_dtypes load the same type, shape and bits, and that our
// own reader round-trips it.
func TestWriteReadByNumpy(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	written := map[string]*tensor.Tensor{}
	var files []string
	for _, ty := range dtype.All() {
		for si, dims := range [][]int64{{2, 3, 4}, {7}, {}, {0, 2}} {
			src := sampleTensor(ty, dims)
			f := filepath.Join(dir, ty.String()+"_"+string(rune('a'+si))+".npy")
			if err := WriteFile(f, src); err != nil {
				t.Fatal(err)
			}
			back, err := ReadFile(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if back.Type != src.Type || !slices.Equal(back.Dims, src.Dims) || !bytes.Equal(back.Data, src.Data) {
				t.Errorf("%v: round trip gave %v", src, back)
			}
			written[f] = src
			files = append(files, f)
		}
	}
	var got map[string]struct {
		Name  string
		Shape []int64
		Hex   string
	}
	if err := json.Unmarshal(runPython(t, numpyReader, files...), &got); err != nil {
		t.Fatal(err)
	}
	for f, src := range written {
		g := got[f]
		if g.Name != src.Type.NumpyName() || !slices.Equal(g.Shape, src.Dims) || g.Hex != hex.EncodeToString(src.Data) {
			t.Errorf("%v: numpy read %s%v %s, want %s", src, g.Name, g.Shape, g.Hex, hex.EncodeToString(src.Data))
		}
	}
	t.Logf("%d Go-written files loaded by numpy", len(written))
}

// TestNpyioReadsOurFiles cross-checks plain files with a second,
// independent reader.
func TestNpyioReadsOurFiles(t *testing.T) {
	src := sampleTensor(dtype.F32, []int64{3, 4})
	var buf bytes.Buffer
	if err := Write(&buf, src); err != nil {
		t.Fatal(err)
	}
	var got []float32
	if err := npy.Read(&buf, &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, src.F32()) {
		t.Errorf("npyio read %v, want %v", got, src.F32())
	}
}

// TestWriteFileSidecars checks the sidecar life cycle: written for ml_dtypes
// types, removed when a plain tensor replaces the file.
func TestWriteFileSidecars(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.npy")
	if err := WriteFile(f, sampleTensor(dtype.BF16, []int64{4})); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f + MetaSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := ParseMeta(b); err != nil || m.MLDtype != "bfloat16" {
		t.Fatalf("sidecar %q: %v %v", b, m, err)
	}
	if err := WriteFile(f, sampleTensor(dtype.F32, []int64{4})); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f + MetaSuffix); !os.IsNotExist(err) {
		t.Errorf("stale sidecar left behind: %v", err)
	}
	if got, err := ReadFile(f); err != nil || got.Type != dtype.F32 {
		t.Errorf("ReadFile after replace: %v %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(f))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
