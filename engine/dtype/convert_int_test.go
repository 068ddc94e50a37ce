package dtype

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"goldtrace/internal/pyref"
)

// TestSubByteIntsMatchMLDtypes checks DecodeInt against ml_dtypes' view of
// every stored byte (high bits ignored) and EncodeInt's masking against
// ml_dtypes' cast from int64.
func TestSubByteIntsMatchMLDtypes(t *testing.T) {
	refData(t) // skips (or fails, when required) without numpy/ml_dtypes
	const script = `
import json, numpy as np, ml_dtypes as m
vals = list(range(-20, 21))
out = {}
for n in ['int1', 'uint1', 'int2', 'uint2', 'int4', 'uint4']:
    T = getattr(m, n)
    out[n] = {'dec': np.arange(256, dtype=np.uint8).view(T).astype(np.int64).tolist(),
              'enc': np.array(vals, np.int64).astype(T).view(np.uint8).tolist()}
print(json.dumps(out))
`
	raw, err := pyref.Command("-c", script).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var ref map[string]struct{ Dec, Enc []int64 }
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	for _, ty := range []Type{S1, U1, S2, U2, S4, U4} {
		r := ref[ty.NumpyName()]
		for b, want := range r.Dec {
			if got := DecodeInt(ty, uint64(b)); got != want {
				t.Errorf("DecodeInt(%v, %#x) = %d, ml_dtypes %d", ty, b, got, want)
			}
			if got := ToF32(ty, uint64(b)); got != float32(want) {
				t.Errorf("ToF32(%v, %#x) = %g, ml_dtypes %d", ty, b, got, want)
			}
		}
		for i, want := range r.Enc {
			v := int64(i - 20)
			if got := EncodeInt(ty, v); got != uint64(want) {
				t.Errorf("EncodeInt(%v, %d) = %#x, ml_dtypes %#x", ty, v, got, want)
			}
		}
	}
}

// TestFloatToIntMatchesXLA checks FromF32 into integer types against XLA:CPU's
// convert (via JAX): truncation, saturation, NaN -> 0.
func TestFloatToIntMatchesXLA(t *testing.T) {
	refData(t)
	pyref.Require(t, "jax")
	const script = `
import json, jax, numpy as np, ml_dtypes as m
jax.config.update('jax_enable_x64', True)
vals = np.array([0.0, -0.0, 0.4, -0.6, 1.5, -1.5, 2.7, -2.7, 7.9, -8.5, 9, 100, -100, 127.9, 128,
                 -129, 255.9, 256, 65535.5, 65536, -32769, 1e10, -1e10, np.inf, -np.inf, np.nan,
                 3e9, -3e9, 2.0**31, -2.0**31, 2.0**63, -2.0**63, 1.9e19, -1e19], np.float32)
out = {'in': vals.view(np.uint32).tolist()}
for n in ['int2', 'uint2', 'int4', 'uint4', 'int8', 'uint8', 'int16', 'uint16', 'int32',
          'uint32', 'int64', 'uint64', 'bool']:
    dt = getattr(m, n) if n in ('int2', 'uint2', 'int4', 'uint4') else np.dtype(n)
    r = np.asarray(jax.jit(lambda x: x.astype(dt))(vals))
    bits = r.view(np.uint8) if r.dtype.itemsize == 1 else r.view('u%d' % r.dtype.itemsize)
    out[n] = [str(int(b)) for b in bits]
print(json.dumps(out))
`
	raw, err := pyref.Command("-c", script).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var ref map[string]any
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	in := ref["in"].([]any)
	for _, ty := range []Type{S2, U2, S4, U4, S8, U8, S16, U16, S32, U32, S64, U64, Pred} {
		for i, w := range ref[ty.NumpyName()].([]any) {
			x := math.Float32frombits(uint32(in[i].(float64)))
			var want uint64
			if _, err := fmt.Sscan(w.(string), &want); err != nil {
				t.Fatal(err)
			}
			if got := FromF32(ty, x); got != want {
				t.Errorf("FromF32(%v, %g) = %#x, XLA %#x", ty, x, got, want)
			}
		}
	}
}
