package golden

import (
	"path/filepath"
	"testing"

	"goldtrace/engine/dtype"
)

// TestXLACompatBF16MinMax: bf16 maximum/minimum of subnormals. JAX 0.10.2's
// XLA:CPU (here) flushes them, which --xla-compat=0.10 must reproduce bit for
// bit; the newest XLA:CPU keeps them (measured with JAX 0.11.2 in issue 11:
// max(1e-40, 0) is 1e-40), which is the default.
func TestXLACompatBF16MinMax(t *testing.T) {
	needJAX(t)
	dir := t.TempDir()
	python(t, dir, `
import jax, jax.numpy as jnp
bf = ml_dtypes.bfloat16
x = np.array([1e-40, -1e-40, 1e-40, 2e-40, 0, 3.0, -1e-40], dtype=bf)
y = np.array([0, 0, -0.0, 1e-40, 1e-40, 1e-40, -2e-40], dtype=bf)
f = lambda a, b: (jnp.maximum(a, b), jnp.minimum(a, b))
with open("m.hlo", "w") as fh: fh.write(jax.jit(f).lower(x, y).as_text(dialect="hlo"))
mx, mn = jax.jit(f)(x, y)
save("x.npy", x); save("y.npy", y); save("max.npy", np.asarray(mx)); save("min.npy", np.asarray(mn))`)
	in := func(n string) string { return filepath.Join(dir, n) }
	out010 := in("out010")
	if code, _, stderr := runMain("-m", in("m.hlo"), "-i", in("x.npy"), "-i", in("y.npy"), "-O", out010, "--xla-compat=0.10"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameTensor(t, "0.10 maximum", readNpy(t, filepath.Join(out010, OutputFileName(0))), readNpy(t, in("max.npy")))
	sameTensor(t, "0.10 minimum", readNpy(t, filepath.Join(out010, OutputFileName(1))), readNpy(t, in("min.npy")))

	out := in("out")
	if code, _, stderr := runMain("-m", in("m.hlo"), "-i", in("x.npy"), "-i", in("y.npy"), "-O", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	bf := func(v float32) uint16 { return uint16(dtype.FromF32(dtype.BF16, v)) }
	sub1, sub2 := bf(1e-40), bf(2e-40)
	negSub1, negSub2 := bf(-1e-40), bf(-2e-40)
	wantMax := []uint16{sub1, 0, sub1, sub2, sub1, bf(3), negSub1}
	wantMin := []uint16{0, negSub1, 0x8000, sub1, 0, sub1, negSub2}
	for k, want := range [][]uint16{wantMax, wantMin} {
		got := readNpy(t, filepath.Join(out, OutputFileName(k)))
		raw := got.Data
		for i, w := range want {
			g := uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
			if g != w {
				t.Errorf("output %d element %d: bits %#04x, want %#04x", k, i, g, w)
			}
		}
	}
	if code, _, _ := runMain("-m", in("m.hlo"), "-i", in("x.npy"), "-i", in("y.npy"), "-O", in("bad"), "--xla-compat=0.9"); code != ExitUsage {
		t.Errorf("--xla-compat=0.9: exit %d, want %d", code, ExitUsage)
	}
}
