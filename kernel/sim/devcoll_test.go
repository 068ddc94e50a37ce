package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// Device collectives through a test network of n devices, each running the
// kernel on its own goroutine. Expected values are float32 arithmetic done
// here, independently of the simulator.

// testNet meets the k-th exchange of every device.
type testNet struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	seq    []int
	rounds map[int][][]float64
	got    map[int]int
	failed error
}

func newTestNet(n int) *testNet {
	t := &testNet{n: n, seq: make([]int, n), rounds: map[int][][]float64{}, got: map[int]int{}}
	t.cond = sync.NewCond(&t.mu)
	return t
}

type testDev struct {
	net  *testNet
	rank int
}

func (d testDev) Rank() int64 { return int64(d.rank) }
func (d testDev) Size() int64 { return int64(d.net.n) }
func (d testDev) Exchange(site int, data []float64) ([][]float64, error) {
	t := d.net
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.seq[d.rank]
	t.seq[d.rank]++
	if t.rounds[k] == nil {
		t.rounds[k] = make([][]float64, t.n)
	}
	t.rounds[k][d.rank] = data
	t.got[k]++
	t.cond.Broadcast()
	for t.got[k] < t.n && t.failed == nil {
		t.cond.Wait()
	}
	if t.got[k] < t.n {
		return nil, t.failed
	}
	return t.rounds[k], nil
}

func (t *testNet) fail(err error) {
	t.mu.Lock()
	if t.failed == nil {
		t.failed = err
	}
	t.mu.Unlock()
	t.cond.Broadcast()
}

// runDevices runs k on every device of a test network, device d on ins[d].
func runDevices(t *testing.T, k *irpb.Kernel, ins [][]*tensor.Tensor) ([][]*tensor.Tensor, []error) {
	t.Helper()
	net := newTestNet(len(ins))
	outs := make([][]*tensor.Tensor, len(ins))
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for d := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[d], errs[d] = Run(k, ins[d], Options{Parallel: 2, Devices: testDev{net, d}})
			if errs[d] != nil {
				net.fail(errs[d])
			}
		}()
	}
	wg.Wait()
	return outs, errs
}

func f32s(t *tensor.Tensor) []float32 { return append([]float32{}, t.F32()...) }

func wantBits(t *testing.T, what string, got *tensor.Tensor, want []float32) {
	t.Helper()
	g := got.F32()
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range want {
		if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g[i], want[i])
		}
	}
}

// rowsOf returns rows [r0, r1) of a row-major (rows, cols) matrix.
func rowsOf(x []float32, cols, r0, r1 int) []float32 { return x[r0*cols : r1*cols] }

func TestDeviceCollectives(t *testing.T) {
	const n, p, f = 4, 8, 16
	b := newK("cc")
	x := b.param("x", dtype.F32, p, f)
	sum := b.output("sum", dtype.F32, p, f)
	gath := b.output("gathered", dtype.F32, 2*p, f)
	scat := b.output("scattered", dtype.F32, p, f/2)
	a2a := b.output("a2a", dtype.F32, p, f)
	perm := b.output("permuted", dtype.F32, p, f)
	mn := b.output("min", dtype.F32, p, f)
	b.op("cc_all_reduce", dts(b.full(sum)), dts(b.full(x)), attrs{"op": S("add")})
	b.op("cc_all_gather", dts(b.full(gath)), dts(b.full(x)), attrs{"collective_dim": I(0), "replica_groups": Ints(2, 0, 1, 3), "group_size": I(2)})
	b.op("cc_reduce_scatter", dts(b.full(scat)), dts(b.full(x)), attrs{"op": S("maximum"), "collective_dim": I(1), "replica_groups": Ints(0, 2, 1, 3), "group_size": I(2)})
	b.op("cc_all_to_all", dts(b.full(a2a)), dts(b.full(x)), attrs{"collective_dim": I(0)})
	b.op("cc_collective_permute", dts(b.full(perm)), dts(b.full(x)), attrs{"source_target_pairs": Ints(0, 1, 1, 2, 2, 3)})
	// SBUF to SBUF, in a loop (one collective per iteration).
	xs, ms := b.sbuf("xs", dtype.F32, 1, f), b.sbuf("ms", dtype.F32, 1, f)
	b.loop(irpb.LoopKind_AFFINE, 0, p, 1, func(v int) {
		b.alloc(xs)
		b.alloc(ms)
		b.dma(b.full(xs), b.tile(x, []int64{1, f}, aff(0, lv(v, 1))))
		b.op("cc_all_reduce", dts(b.full(ms)), dts(b.full(xs)), attrs{"op": S("minimum"), "replica_groups": Ints(0, 1, 2, 3), "group_size": I(4)})
		b.dma(b.tile(mn, []int64{1, f}, aff(0, lv(v, 1))), b.full(ms))
	})
	k := b.kernel()
	if err := ir.Validate(k); err != nil {
		t.Fatalf("validate: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	ins := make([][]*tensor.Tensor, n)
	xv := make([][]float32, n)
	for d := range ins {
		xt := randTensor(r, dtype.F32, -2, 2, p, f)
		xt.F32()[3] = float32(math.Copysign(0, -1)) // -0 + -0 + ... sums to +0 (from the identity)
		if d == 1 {
			xt.F32()[5] = float32(math.NaN()) // max/min never let a NaN win
		}
		ins[d], xv[d] = []*tensor.Tensor{xt}, f32s(xt)
	}
	for d := range ins {
		xv[d][3] = float32(math.Copysign(0, -1))
	}
	outs, errs := runDevices(t, k, ins)
	for d, err := range errs {
		if err != nil {
			t.Fatalf("device %d: %v", d, err)
		}
	}
	for d := range n {
		// all_reduce add over every device, from +0 in device order.
		want := make([]float32, p*f)
		for _, v := range xv {
			for i := range want {
				want[i] += v[i]
			}
		}
		if math.Signbit(float64(want[3])) {
			t.Fatal("test: the sum of -0s must start from +0")
		}
		wantBits(t, fmt.Sprintf("device %d sum", d), outs[d][0], want)
		// all_gather in groups {2,0} and {1,3}, group order.
		g := map[int][]int{0: {2, 0}, 2: {2, 0}, 1: {1, 3}, 3: {1, 3}}[d]
		wantBits(t, fmt.Sprintf("device %d gathered", d), outs[d][1], append(append([]float32{}, xv[g[0]]...), xv[g[1]]...))
		// reduce_scatter max in groups {0,2}, {1,3} along dim 1: position i keeps columns block i.
		grp := map[int][]int{0: {0, 2}, 2: {0, 2}, 1: {1, 3}, 3: {1, 3}}[d]
		pos := map[int]int{0: 0, 2: 1, 1: 0, 3: 1}[d]
		ws := make([]float32, p*f/2)
		for i := range ws {
			row, col := i/(f/2), pos*(f/2)+i%(f/2)
			acc := float32(math.Inf(-1))
			for _, m := range grp {
				if v := xv[m][row*f+col]; acc < v {
					acc = v
				}
			}
			ws[i] = acc
		}
		wantBits(t, fmt.Sprintf("device %d scattered", d), outs[d][2], ws)
		// all_to_all along rows: block d of every device, in device order.
		var wa []float32
		for m := range n {
			wa = append(wa, rowsOf(xv[m], f, d*p/n, (d+1)*p/n)...)
		}
		wantBits(t, fmt.Sprintf("device %d all_to_all", d), outs[d][3], wa)
		// permute 0->1->2->3: device 0 receives nothing and keeps the unwritten output (NaN).
		if d == 0 {
			for i, v := range outs[d][4].F32() {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("device 0 permuted[%d] = %v; nobody sends to device 0", i, v)
				}
			}
		} else {
			wantBits(t, fmt.Sprintf("device %d permuted", d), outs[d][4], xv[d-1])
		}
		// min over all, per row through SBUF; NaN never wins.
		wm := make([]float32, p*f)
		for i := range wm {
			acc := float32(math.Inf(1))
			for _, v := range xv {
				if v[i] < acc {
					acc = v[i]
				}
			}
			wm[i] = acc
		}
		wantBits(t, fmt.Sprintf("device %d min", d), outs[d][5], wm)
	}
}

// A launch with several program instances: each instance's collectives meet
// the same instance's on the other devices (instances run in order).
func TestDeviceCollectivesPerProgramInstance(t *testing.T) {
	const n, g, p, f = 3, 2, 4, 8
	b := newK("cc_grid", g)
	x := b.param("x", dtype.F32, g*p, f)
	o := b.output("out", dtype.F32, g*p, f)
	xs, rs := b.sbuf("xs", dtype.F32, p, f), b.sbuf("rs", dtype.F32, p, f)
	b.alloc(xs)
	b.alloc(rs)
	b.dma(b.full(xs), b.tile(x, []int64{p, f}, aff(0, pid(0, p))))
	b.op("cc_all_reduce", dts(b.full(rs)), dts(b.full(xs)), attrs{"op": S("add")})
	b.dma(b.tile(o, []int64{p, f}, aff(0, pid(0, p))), b.full(rs))
	k := b.kernel()
	r := rand.New(rand.NewPCG(7, 8))
	ins := make([][]*tensor.Tensor, n)
	want := make([]float32, g*p*f)
	for d := range ins {
		xt := randTensor(r, dtype.F32, -1, 1, g*p, f)
		ins[d] = []*tensor.Tensor{xt}
		for i, v := range xt.F32() {
			want[i] += v
		}
	}
	outs, errs := runDevices(t, k, ins)
	for d := range n {
		if errs[d] != nil {
			t.Fatalf("device %d: %v", d, errs[d])
		}
		wantBits(t, fmt.Sprintf("device %d", d), outs[d][0], want)
	}
}

func TestDeviceCollectivesOnOneDevice(t *testing.T) {
	build := func(at attrs) *irpb.Kernel {
		b := newK("cc_one")
		x := b.param("x", dtype.F32, 4, 8)
		o := b.output("out", dtype.F32, 4, 8)
		b.op("cc_all_reduce", dts(b.full(o)), dts(b.full(x)), at)
		return b.kernel()
	}
	r := rand.New(rand.NewPCG(9, 10))
	xt := randTensor(r, dtype.F32, -1, 1, 4, 8)
	xt.F32()[0] = float32(math.Copysign(0, -1))
	want := f32s(xt)
	want[0] = 0 // +0 from the identity
	// A group of this device alone (or every device, which is this one) is the identity.
	for _, at := range []attrs{{"op": S("add")}, {"op": S("add"), "replica_groups": Ints(0), "group_size": I(1)}} {
		wantBits(t, "one device", run(t, build(at), xt)[0], want)
	}
	// A group needing devices that are not there: a runtime error naming the instruction.
	_, err := Run(build(attrs{"op": S("add"), "replica_groups": Ints(0, 1)}), []*tensor.Tensor{xt}, Options{})
	var se *Error
	if !errors.As(err, &se) || se.Rule != "runtime" || se.Op != "cc_all_reduce" || se.Line == 0 ||
		!strings.Contains(err.Error(), "names device 1, but the kernel runs on one device") {
		t.Fatalf("group beyond one device: %v", err)
	}
	// A permute naming another device, too.
	b := newK("cc_perm")
	x := b.param("x", dtype.F32, 4, 8)
	o := b.output("out", dtype.F32, 4, 8)
	b.op("cc_collective_permute", dts(b.full(o)), dts(b.full(x)), attrs{"source_target_pairs": Ints(0, 1)})
	if _, err := Run(b.kernel(), []*tensor.Tensor{xt}, Options{}); err == nil || !strings.Contains(err.Error(), "cc_collective_permute") || !strings.Contains(err.Error(), "beyond the 1 running") {
		t.Fatalf("permute to a missing device: %v", err)
	}
}

// nl.all_reduce across instances and device collectives in one launch of
// several instances: refused (the two need different instance schedules).
func TestDeviceCollectivesWithLaunchAllReduceRefused(t *testing.T) {
	b := newK("mixed", 2)
	x := b.param("x", dtype.F32, 4, 8)
	o := b.output("out", dtype.F32, 4, 8)
	xs, rs := b.sbuf("xs", dtype.F32, 4, 8), b.sbuf("rs", dtype.F32, 4, 8)
	b.alloc(xs)
	b.alloc(rs)
	b.dma(b.full(xs), b.full(x))
	b.op("all_reduce", dts(b.full(rs)), dts(b.full(xs)), attrs{"op": S("add")})
	b.op("cc_all_reduce", dts(b.full(xs)), dts(b.full(rs)), attrs{"op": S("add")})
	b.dma(b.full(o), b.full(xs))
	_, err := Run(b.kernel(), []*tensor.Tensor{tensor.New(dtype.F32, []int64{4, 8})}, Options{})
	if !IsInvalidKernel(err) || !strings.Contains(err.Error(), "mixes nl.all_reduce") {
		t.Fatalf("mixed collectives: %v", err)
	}
}

// A device that fails releases the others (no hang) and the first error is
// the device's own.
func TestDeviceCollectivesFailureReleasesOthers(t *testing.T) {
	b := newK("cc_fail")
	x := b.param("x", dtype.F32, 4, 8)
	o := b.output("out", dtype.F32, 4, 8)
	b.op("cc_all_gather", dts(b.full(o)), dts(b.full(x)), attrs{"collective_dim": I(0)})
	// 4 rows gathered from 2 devices need 8: every device fails alike.
	ins := [][]*tensor.Tensor{{tensor.New(dtype.F32, []int64{4, 8})}, {tensor.New(dtype.F32, []int64{4, 8})}}
	_, errs := runDevices(t, b.kernel(), ins)
	for d, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "gathered from 2 devices") {
			t.Fatalf("device %d: %v", d, err)
		}
	}
}
