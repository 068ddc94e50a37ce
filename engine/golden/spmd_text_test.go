package golden

import (
	"path/filepath"
	"strings"
	"testing"

	"goldtrace/engine/tensor"
)

// Hand-written modules for spellings JAX 0.10.2 does not print (from XLA's
// printers: mesh_and_axis.cc, replica_group.cc, named_sharding.cc, and
// Shardy's attribute syntax), each checked against numpy.

const sdySubAxesModule = `HloModule sub_axes, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=4]>}}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

body {
  p = f32[2,2] parameter(0)
  ROOT r = f32[2,2] all-reduce(p), channel_id=1, replica_groups=mesh[x=4] {x:(2)2}, use_global_device_ids=true, to_apply=add
}

ENTRY main {
  g = f32[4,4] parameter(0)
  l = f32[2,2] custom-call(g), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\":(1)2}, {\"x\":(2)2}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  c = f32[2,2] call(l), to_apply=body
  ROOT o = f32[4,4] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\":(1)2}, {\"x\":(2)2}]>]>"}
}
`

// The older Shardy export: shardings and manual axes on the call of the
// body rather than on the markers.
const sdyOldPathModule = `HloModule old_path, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=4]>}}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

xla.sdy.manual_computation_body.7 {
  p = f32[2,2] parameter(0)
  ROOT r = f32[2,2] all-reduce(p), channel_id=1, replica_groups=[2,2]<=[4], use_global_device_ids=true, to_apply=add
}

ENTRY main {
  g = f32[4,4] parameter(0)
  l = f32[2,2] custom-call(g), custom_call_target="xla.sdy.GlobalToLocalShape"
  c = f32[2,2] call(l), to_apply=xla.sdy.manual_computation_body.7, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\":(1)2}, {\"x\":(2)2}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\":(1)2}, {\"x\":(2)2}]>]>"}
  ROOT o = f32[4,4] custom-call(c), custom_call_target="xla.sdy.LocalToGlobalShape"
}
`

// A mesh with explicit device ids, an inline mesh in the sharding, bare
// axis names in the collective's mesh-axes groups with device_ids, and a
// sharding that leaves an axis replicated.
const sdyDeviceIDsModule = `HloModule device_ids, frontend_attributes={xla.sdy.meshes={m = #sdy.mesh<["a"=2, "b"=2], device_ids=[3,2,1,0]>}}

add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}

ENTRY main {
  g = s32[4,6] parameter(0)
  l = s32[2,3] custom-call(g), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<mesh<[\"a\"=2, \"b\"=2], device_ids=[3,2,1,0]>, [{\"a\"}, {\"b\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"a\", \"b\"}>"}
  pid = u32[] partition-id()
  pids = s32[] convert(pid)
  pb = s32[2,3] broadcast(pids), dimensions={}
  r = s32[2,3] all-reduce(l), channel_id=1, replica_groups=mesh[a=2,b=2], device_ids=(3,2,1,0) {b}, use_global_device_ids=true, to_apply=add
  s = s32[2,3] add(r, pb)
  ROOT o = s32[4,6] custom-call(s), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"a\", \"b\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@m, [{\"a\"}, {\"b\"}]>]>"}
}
`

// GSPMD markers with an explicit device list and a trailing replicated
// tile dimension written as last_tile_dims={replicated}.
const gspmdExplicitModule = `HloModule gspmd_explicit

ENTRY main {
  g = s32[4,4] parameter(0)
  s = s32[4,4] custom-call(g), custom_call_target="Sharding", sharding={devices=[2,2]0,2,1,3}
  l = s32[2,2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  pid = u32[] partition-id()
  pids = s32[] convert(pid)
  pb = s32[2,2] broadcast(pids), dimensions={}
  m = s32[2,2] multiply(l, pb)
  ms = s32[2,2] custom-call(m), custom_call_target="Sharding", sharding={manual}
  ROOT o = s32[2,4] custom-call(ms), custom_call_target="SPMDShardToFullShape", sharding={devices=[1,2,2]0,1,2,3 last_tile_dims={replicated}}
}
`

// Newer XLA's named shardings on GSPMD markers (NamedSharding::ToString),
// with bare and quoted names, a sub-axis and replicated axes.
const gspmdNamedModule = `HloModule gspmd_named

ENTRY main {
  g = s32[4,8] parameter(0)
  s = s32[4,8] custom-call(g), custom_call_target="Sharding", sharding={mesh['x'=2,'y'=4], [{'x'}, {'y':(1)2}], replicated={'y':(2)2}, metadata={op_name="a"}}
  l = s32[2,4] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={mesh['x'=2,'y'=4], manual}
  pid = u32[] partition-id()
  pids = s32[] convert(pid)
  pb = s32[2,4] broadcast(pids), dimensions={}
  m = s32[2,4] add(l, pb)
  ms = s32[2,4] custom-call(m), custom_call_target="Sharding", sharding={manual}
  ROOT o = s32[2,16] custom-call(ms), custom_call_target="SPMDShardToFullShape", sharding={mesh[x=2,y=4], [{}, {y}]}
}
`

// An uneven split: 10 elements over 4 devices in blocks of 3, the last
// padded.
const gspmdUnevenModule = `HloModule gspmd_uneven

ENTRY main {
  g = f32[10] parameter(0)
  s = f32[10] custom-call(g), custom_call_target="Sharding", sharding={devices=[4]<=[4]}
  l = f32[3] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  pid = u32[] partition-id()
  one = u32[] constant(1)
  k = u32[] add(pid, one)
  kf = f32[] convert(k)
  kb = f32[3] broadcast(kf), dimensions={}
  m = f32[3] multiply(l, kb)
  ms = f32[3] custom-call(m), custom_call_target="Sharding", sharding={manual}
  ROOT o = f32[10] custom-call(ms), custom_call_target="SPMDShardToFullShape", sharding={devices=[4]<=[4]}
}
`

func TestSPMDHandWrittenSpellings(t *testing.T) {
	dir := t.TempDir()
	python(t, dir, `
g = rng.standard_normal((4, 4)).astype(np.float32)
save("sub_in.npy", g)
# x = 4 devices; x:(1)2 is the major half (block row), x:(2)2 the minor
# half (block column); the all-reduce sums over the minor half.
blocks = g.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3)  # [bi, bj, 2, 2]
out = np.empty_like(blocks)
for i in range(2):
    for j in range(2):
        out[i, j] = blocks[i, 0] + blocks[i, 1]
save("sub_out.npy", out.transpose(0, 2, 1, 3).reshape(4, 4))

h = rng.integers(-100, 100, size=(4, 6)).astype(np.int32)
save("ids_in.npy", h)
# mesh a=2, b=2 with device_ids [3,2,1,0]: device at (a, b) is 3 - (2a + b).
hb = h.reshape(2, 2, 2, 3).transpose(0, 2, 1, 3)  # [a, b, 2, 3]
out = np.empty_like(hb)
for a in range(2):
    for b in range(2):
        out[a, b] = hb[a, 0] + hb[a, 1] + (3 - (2 * a + b))
save("ids_out.npy", out.transpose(0, 2, 1, 3).reshape(4, 6))

k = rng.integers(-100, 100, size=(4, 4)).astype(np.int32)
save("gs_in.npy", k)
# devices=[2,2]0,2,1,3: device at tile (i, j) is [[0, 2], [1, 3]][i][j].
dev = [[0, 2], [1, 3]]
res = np.zeros((2, 4), np.int32)
# out devices=[1,2,2]0,1,2,3 replicated last: tile column j is held by
# devices 2j and 2j+1; the first of them supplies it.
for j in range(2):
    d = 2 * j
    i, jj = [(a, b) for a in range(2) for b in range(2) if dev[a][b] == d][0]
    res[:, 2 * j:2 * j + 2] = k[2 * i:2 * i + 2, 2 * jj:2 * jj + 2] * d
save("gs_out.npy", res)

q = rng.integers(-100, 100, size=(4, 8)).astype(np.int32)
save("named_in.npy", q)
# mesh x=2, y=4: device 4x + y. Input blocks: rows by x, columns (blocks of
# 4) by the major half of y, y // 2; devices with y % 2 = 0, 1 hold copies.
# Output [2,16]: columns (blocks of 4) by y; every x holds a copy, the first
# (x = 0) supplies it.
res = np.zeros((2, 16), np.int32)
for y in range(4):
    d = y  # x = 0
    res[:, 4 * y:4 * y + 4] = q[0:2, 4 * (y // 2):4 * (y // 2) + 4] + d
save("named_out.npy", res)

u = rng.standard_normal(10).astype(np.float32)
save("uneven_in.npy", u)
save("uneven_out.npy", u * np.repeat(np.arange(1, 5, dtype=np.float32), 3)[:10])
`)
	cases := []struct{ name, src, in, want string }{
		{"sdy_sub_axes", sdySubAxesModule, "sub_in.npy", "sub_out.npy"},
		{"sdy_old_export_path", sdyOldPathModule, "sub_in.npy", "sub_out.npy"},
		{"sdy_device_ids_inline_mesh", sdyDeviceIDsModule, "ids_in.npy", "ids_out.npy"},
		{"gspmd_explicit_devices", gspmdExplicitModule, "gs_in.npy", "gs_out.npy"},
		{"gspmd_named_shardings", gspmdNamedModule, "named_in.npy", "named_out.npy"},
		{"gspmd_uneven", gspmdUnevenModule, "uneven_in.npy", "uneven_out.npy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".hlo")
			writeFile(t, path, c.src)
			l, err := LoadModule(path, ModuleAuto)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(l.Module, []*tensor.Tensor{readNpy(t, filepath.Join(dir, c.in))}, Options{SPMD: true})
			if err != nil {
				t.Fatal(err)
			}
			closeTensor(t, "output", res.Outputs[0], readNpy(t, filepath.Join(dir, c.want)), 1e-6)
		})
	}
}

// TestSPMDMarkersNeedSPMD: without -S a manual region's shape-changing
// markers fail before evaluating, naming the fix.
func TestSPMDMarkersNeedSPMD(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.hlo")
	writeFile(t, path, sdySubAxesModule)
	out := filepath.Join(dir, "out")
	python(t, dir, `save("x.npy", np.zeros((4, 4), np.float32))`)
	code, _, stderr := runMain("-m", path, "-i", filepath.Join(dir, "x.npy"), "-O", out)
	if code != ExitEval || !strings.Contains(stderr, "xla.sdy.GlobalToLocalShape") || !strings.Contains(stderr, "-S") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if files := listFiles(t, out); len(files) > 0 {
		t.Errorf("files written: %v", files)
	}
}

// TestTotalOrderSpelledOrderTotal: newer XLA's order=TOTAL (for
// type=TOTALORDER) must sort NaNs and signed zeros in IEEE total order, and
// compare elementwise in it, not in the default float order.
func TestTotalOrderSpelledOrderTotal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sort.hlo")
	writeFile(t, path, `HloModule total_order

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT, order=TOTAL
}

ENTRY main {
  x = f32[12] parameter(0)
  y = f32[12] parameter(1)
  s = f32[12] sort(x), dimensions={0}, is_stable=true, to_apply=lt
  e = pred[12] compare(x, y), direction=EQ, order=TOTAL
  l = pred[12] compare(x, y), direction=LT, order=TOTAL
  ROOT t = (f32[12], pred[12], pred[12]) tuple(s, e, l)
}
`)
	python(t, dir, `
nan = np.float32(np.nan)
negnan = np.frombuffer(np.uint32(0xFFC00000).tobytes(), np.float32)[0]
x = np.array([3, nan, -0.0, 0.0, -np.inf, negnan, 1e-45, -2, np.inf, 0.0, -0.0, nan], np.float32)
y = np.array([3, nan, 0.0, -0.0, -np.inf, nan, 0, -2, np.inf, 0.0, -0.0, negnan], np.float32)
def key(v):
    b = v.view(np.int32).astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF) - 1, b)
save("x.npy", x); save("y.npy", y)
save("sorted.npy", x[np.argsort(key(x), kind="stable")])
save("eq.npy", key(x) == key(y)); save("lt.npy", key(x) < key(y))
`)
	out := filepath.Join(dir, "out")
	if code, _, stderr := runMain("-m", path, "-i", filepath.Join(dir, "x.npy"), "-i", filepath.Join(dir, "y.npy"), "-O", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for k, want := range []string{"sorted.npy", "eq.npy", "lt.npy"} {
		sameTensor(t, want, readNpy(t, filepath.Join(out, OutputFileName(k))), readNpy(t, filepath.Join(dir, want)))
	}
}

// TestCLISPMD: -S from the command line writes the global outputs, and no
// per-device directories.
func TestCLISPMD(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.hlo")
	writeFile(t, path, sdySubAxesModule)
	python(t, dir, `
g = rng.standard_normal((4, 4)).astype(np.float32)
save("x.npy", g)
b = g.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3)
o = np.stack([np.stack([b[i, 0] + b[i, 1]] * 2) for i in range(2)])
save("want.npy", o.transpose(0, 2, 1, 3).reshape(4, 4))`)
	out := filepath.Join(dir, "out")
	if code, _, stderr := runMain("-m", path, "-i", filepath.Join(dir, "x.npy"), "-S", "-O", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	closeTensor(t, "output", readNpy(t, filepath.Join(out, OutputFileName(0))), readNpy(t, filepath.Join(dir, "want.npy")), 1e-6)
	if files := listFiles(t, out); len(files) != 1 {
		t.Errorf("files written: %v, want only %s", files, OutputFileName(0))
	}
	if code, _, _ := runMain("-m", path, "-i", filepath.Join(dir, "x.npy"), "-S", "-e", "-O", filepath.Join(dir, "bad")); code != ExitUsage {
		t.Errorf("-S with -e: exit %d, want %d", code, ExitUsage)
	}
}
