package sim

import (
	"fmt"
	"slices"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// program is a kernel checked and prepared for running: attributes parsed,
// shapes checked, accesses turned into coefficient tables.
type program struct {
	k              *irpb.Kernel
	body           []stmt
	numInstances   int64
	hasCollectives bool
	// hasDeviceCollectives: cc_* instructions, which meet the other devices
	// in program order, so instances run one after the other.
	hasDeviceCollectives bool
	serialInstances      bool // atomics / prints / RNG: instances run in order
	hasPhysSBUF          bool
	hasPhysPSUM          bool
	// f32Store: float SBUF tensors read by matmul keep float32 storage, so
	// the GEMM reads them in place.
	f32Store map[int32]bool
	// used: tensors some instruction accesses (others get no storage)
	used []bool
}

type stmt struct {
	inst *cinst
	loop *cloop
}

type cloop struct {
	v                 int32
	start, stop, step int64
	body              []stmt
	// parallel: iterations may run concurrently (see parallelSafe).
	parallel bool
	locals   []int32 // tensors local to one iteration (fresh per worker)
	affine   bool
	loc      *irpb.Loc
}

// term is a non-tile variable of an affine expression.
type term struct {
	kind irpb.TermKind
	id   int32
	coef int64
}

// caff is an Affine split into constant, per-tile-axis coefficients and
// loop-variable / program-id terms.
type caff struct {
	c    int64
	tile []int64 // coefficient per tile axis (len = tile rank)
	vt   []term
}

func (a *caff) outer(in *instance) int64 {
	v := a.c
	for _, t := range a.vt {
		if t.kind == irpb.TermKind_LOOP_VAR {
			v += t.coef * in.vars[t.id]
		} else {
			v += t.coef * in.pid[t.id]
		}
	}
	return v
}

type cacc struct {
	tensor int32
	t      *irpb.Tensor
	dt     dtype.Type
	shape  []int
	n      int
	idx    []caff
	dyn    []cdyn
	tstr   []int64 // row-major strides of the tensor (private storage)
}

type cdyn struct {
	dim int
	acc *cacc
}

type cpred struct {
	e   caff
	cmp irpb.Cmp
}

type cinst struct {
	op    string
	in    *irpb.Instruction
	dst   []*cacc
	src   []*cacc
	mask  []cpred
	preds []cpred
	exprs []caff
	file  string
	line  int
	run   func(in *instance, ci *cinst) error
	aux   any // op-specific prepared data
	// allocElided: an alloc whose sentinel fill is skipped (the next
	// instruction overwrites the whole tensor).
	allocElided bool
	// allocCovered: an alloc whose fill is skipped because the loop after it
	// overwrites the whole tensor (loopCovers).
	allocCovered bool
}

func (ci *cinst) errf(rule, format string, args ...any) *Error {
	return &Error{Rule: rule, Op: ci.op, File: ci.file, Line: ci.line, Msg: fmt.Sprintf(format, args...)}
}

type compiler struct {
	k       *irpb.Kernel
	p       *program
	loopVar map[int32]bool // loop vars in scope
	ccSites int            // cc_* instructions compiled so far (their site ids)
}

func locOf(k *irpb.Kernel, l *irpb.Loc) (string, int) {
	if l == nil {
		return "", 0
	}
	f := ""
	if l.File >= 0 && int(l.File) < len(k.Files) {
		f = k.Files[l.File]
	}
	return f, int(l.Line)
}

func compile(k *irpb.Kernel) (*program, error) {
	if k == nil {
		return nil, &Error{Rule: "invalid", Msg: "nil kernel"}
	}
	if k.SchemaVersion != 0 && k.SchemaVersion != uint32(irpb.SchemaVersion_SCHEMA_VERSION_CURRENT) {
		return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("kernel schema version %d is not supported (want %d)", k.SchemaVersion, irpb.SchemaVersion_SCHEMA_VERSION_CURRENT)}
	}
	p := &program{k: k, numInstances: 1}
	for _, g := range k.Grid {
		if g <= 0 || g > 1<<20 || p.numInstances*g > 1<<20 {
			return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("launch grid %v is not a positive grid of at most 2^20 instances", k.Grid)}
		}
		p.numInstances *= g
	}
	for i, t := range k.Tensors {
		if t == nil || t.Id != int32(i) {
			return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("tensors[%d] has id %v", i, t.GetId())}
		}
		dt := dtype.Type(t.Dtype)
		if !dt.Valid() || !(dt.IsFloat() || dt.IsInteger() || dt == dtype.Pred) || dt.Bits() > 32 || dt.IsSubByte() {
			return nil, tensorErr(k, t, "dtype %d is not a kernel dtype", t.Dtype)
		}
		if err := tensor.CheckShape(dt, t.Shape); err != nil {
			return nil, tensorErr(k, t, "%v", err)
		}
		if t.Role == irpb.TensorRole_CONSTANT {
			if int64(len(t.Data)) != tensor.NumElements(t.Shape)*int64(dt.Size()) {
				return nil, tensorErr(k, t, "constant holds %d bytes, its shape needs %d", len(t.Data), tensor.NumElements(t.Shape)*int64(dt.Size()))
			}
		}
		if a := t.Allocation; a != nil {
			if t.Memory != irpb.Memory_SBUF && t.Memory != irpb.Memory_PSUM {
				continue // placement of HBM tensors is not modelled
			}
			if len(t.Shape) == 0 {
				return nil, tensorErr(k, t, "placed tensor has no partition dimension")
			}
			partBytes := int64(sbufPartBytes)
			if t.Memory == irpb.Memory_PSUM {
				partBytes = psumPartBytes
				p.hasPhysPSUM = true
			} else {
				p.hasPhysSBUF = true
			}
			free := tensor.NumElements(t.Shape[1:]) * int64(dt.Size())
			last := a.ByteOffset
			if a.NumFreeTiles > 1 {
				last += (a.NumFreeTiles - 1) * a.BytesPerTile
			}
			if a.PartitionOffset < 0 || a.PartitionOffset+t.Shape[0] > numPartitions || a.ByteOffset < 0 || a.BytesPerTile < 0 || last+free > partBytes {
				return nil, tensorErr(k, t, "allocation (partition %d, byte %d, %d tiles of %d bytes) of %d partitions × %d bytes leaves %v (%d partitions × %d bytes)",
					a.PartitionOffset, a.ByteOffset, a.NumFreeTiles, a.BytesPerTile, t.Shape[0], free, t.Memory, numPartitions, partBytes)
			}
			if a.NumFreeTiles > 1 && (a.LoopVar < 0 || a.LoopVar >= k.NumVars) {
				return nil, tensorErr(k, t, "allocation loop_var %d out of range", a.LoopVar)
			}
		}
	}
	for _, id := range append(append([]int32{}, k.Inputs...), k.Outputs...) {
		if id < 0 || int(id) >= len(k.Tensors) {
			return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("input/output tensor id %d out of range", id)}
		}
	}
	for _, id := range k.Outputs {
		t := k.Tensors[id]
		if t.Memory != irpb.Memory_SHARED_HBM && !isInput(k, id) {
			return nil, tensorErr(k, t, "returned tensor must be in shared HBM (is %v)", t.Memory)
		}
	}
	c := &compiler{k: k, p: p, loopVar: map[int32]bool{}}
	body, err := c.block(k.Body)
	if err != nil {
		return nil, err
	}
	p.body = body
	total := map[int32]int{}
	countAccesses(body, total)
	markParallel(body, total)
	if p.hasCollectives && p.hasDeviceCollectives && p.numInstances > 1 {
		// nl.all_reduce needs the launch's instances to run together, device
		// collectives need them one after the other (program order).
		return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("kernel %s mixes nl.all_reduce across its %d program instances with device collectives (nki.collectives); the simulator runs one or the other", k.Name, p.numInstances)}
	}
	p.used = make([]bool, len(k.Tensors))
	for id := range total {
		p.used[id] = true
	}
	n := float64(p.numInstances) * countExecs(body)
	if n > float64(MaxInstructionExecutions) {
		return nil, &Error{Rule: "invalid", Msg: fmt.Sprintf("kernel %s executes about %.3g instructions (loops × program instances), more than the simulator's limit %d", k.Name, n, MaxInstructionExecutions)}
	}
	return p, nil
}

// MaxInstructionExecutions bounds the instruction executions of one run
// (loop trip counts × instructions × program instances), so a corrupt loop
// bound fails fast instead of running for hours.
var MaxInstructionExecutions int64 = 1 << 28

// MaxTileElements bounds one access's tile (32M elements: more than a whole
// SBUF; DMA tiles of HBM tensors may be that large).
var MaxTileElements int64 = 1 << 25

func countExecs(ss []stmt) float64 {
	n := 0.0
	for _, s := range ss {
		if s.inst != nil {
			n++
			continue
		}
		l := s.loop
		trips := 0.0
		if l.stop > l.start {
			trips = (float64(l.stop) - float64(l.start)) / float64(l.step)
		}
		n += trips * countExecs(l.body)
	}
	return n
}

func isInput(k *irpb.Kernel, id int32) bool {
	for _, x := range k.Inputs {
		if x == id {
			return true
		}
	}
	return false
}

func tensorErr(k *irpb.Kernel, t *irpb.Tensor, format string, args ...any) *Error {
	f, l := locOf(k, t.GetLoc())
	return &Error{Rule: "invalid", File: f, Line: l, Msg: fmt.Sprintf("tensor %s: ", t.GetName()) + fmt.Sprintf(format, args...)}
}

func (c *compiler) block(ss []*irpb.Stmt) ([]stmt, error) {
	out := make([]stmt, 0, len(ss))
	for _, s := range ss {
		switch x := s.GetKind().(type) {
		case *irpb.Stmt_Inst:
			ci, err := c.inst(x.Inst)
			if err != nil {
				return nil, err
			}
			out = append(out, stmt{inst: ci})
		case *irpb.Stmt_Loop:
			l, err := c.loop(x.Loop)
			if err != nil {
				return nil, err
			}
			out = append(out, stmt{loop: l})
		default:
			return nil, &Error{Rule: "invalid", Msg: "empty statement"}
		}
	}
	// An alloc directly followed by a loop that overwrites the whole
	// tensor, one slice per iteration, needs no sentinel fill either.
	for i := 0; i+1 < len(out); i++ {
		a, l := out[i].inst, out[i+1].loop
		if a != nil && l != nil && a.op == "alloc" && a.dst[0].t.Allocation == nil && loopCovers(l, a.dst[0].tensor) {
			a.run = func(*instance, *cinst) error { return nil }
			a.allocCovered = true
		}
	}
	// An alloc directly followed by an instruction that overwrites the
	// whole (private) tensor without reading it needs no sentinel fill.
	for i := 0; i+1 < len(out); i++ {
		a, nx := out[i].inst, out[i+1].inst
		if a == nil || nx == nil || a.op != "alloc" || len(nx.dst) == 0 || len(nx.mask) > 0 {
			continue
		}
		id := a.dst[0].tensor
		if a.dst[0].t.Allocation != nil || nx.dst[0].tensor != id || !coversWhole(nx.dst[0]) || nx.op == "copy_predicated" || nx.op == "atomic_rmw" || nx.op == "nc_stream_shuffle" {
			continue
		}
		if _, rmw := nx.in.Attrs["dst_rmw_op"]; rmw {
			continue
		}
		if mm, ok := nx.aux.(mmAux); ok && mm.accumulate {
			continue
		}
		reads := false
		for _, s := range nx.src {
			if s.tensor == id {
				reads = true
			}
			for _, d := range s.dyn {
				if d.acc.tensor == id {
					reads = true
				}
			}
		}
		if !reads {
			a.run = func(*instance, *cinst) error { return nil }
			a.allocElided = true
		}
	}
	return out, nil
}

// loopCovers: loop l is one instruction that writes tensor id without
// reading it, its dst indexed by the loop variable along one dimension
// (which the loop runs over exactly, step 1) and by whole tile axes along
// the others: the iterations overwrite every element once.
func loopCovers(l *cloop, id int32) bool {
	if len(l.body) != 1 || l.body[0].inst == nil || l.start != 0 || l.step != 1 {
		return false
	}
	ci := l.body[0].inst
	if len(ci.dst) != 1 || ci.dst[0].tensor != id {
		return false
	}
	switch ci.op {
	case "memset", "iota", "dma", "dma_transpose", "tensor_copy", "activation", "tensor_tensor",
		"tensor_scalar", "scalar_tensor_tensor", "tensor_reduce", "transpose", "select", "affine_select":
	default:
		return false
	}
	if len(ci.mask) > 0 {
		return false
	}
	if _, rmw := ci.in.Attrs["dst_rmw_op"]; rmw {
		return false
	}
	reads := false
	ci.accesses(func(a *cacc, w bool) { reads = reads || (!w && a.tensor == id) })
	if reads {
		return false
	}
	d := ci.dst[0]
	if len(d.dyn) > 0 || len(d.idx) != len(d.t.Shape) {
		return false
	}
	usedAxis := make([]bool, len(d.shape))
	loopDims := 0
	for dim, ix := range d.idx {
		if ix.c != 0 {
			return false
		}
		axis := -1
		for k, c := range ix.tile {
			if c == 0 || d.shape[k] == 1 {
				continue
			}
			if c != 1 || axis >= 0 || usedAxis[k] {
				return false
			}
			axis = k
		}
		switch {
		case axis >= 0 && len(ix.vt) == 0 && int64(d.shape[axis]) == d.t.Shape[dim]:
			usedAxis[axis] = true
		case axis < 0 && len(ix.vt) == 1 && ix.vt[0].kind == irpb.TermKind_LOOP_VAR && ix.vt[0].id == l.v && ix.vt[0].coef == 1 && l.stop == d.t.Shape[dim]:
			loopDims++
		case axis < 0 && len(ix.vt) == 0 && d.t.Shape[dim] == 1:
		default:
			return false
		}
	}
	for k, u := range usedAxis {
		if !u && d.shape[k] != 1 {
			return false
		}
	}
	return loopDims == 1
}

// coversWhole: the access is the identity tile over its whole tensor (tile
// axes of extent 1 contribute nothing, whatever their coefficients).
func coversWhole(a *cacc) bool {
	if len(a.shape) != len(a.t.Shape) || len(a.dyn) > 0 {
		return false
	}
	for d, ix := range a.idx {
		if int64(a.shape[d]) != a.t.Shape[d] || ix.c != 0 || len(ix.vt) > 0 {
			return false
		}
		for k, c := range ix.tile {
			if a.shape[k] != 1 && ((k == d && c != 1) || (k != d && c != 0)) {
				return false
			}
		}
	}
	return true
}

func (c *compiler) loop(l *irpb.Loop) (*cloop, error) {
	f, line := locOf(c.k, l.Loc)
	bad := func(format string, args ...any) error {
		return &Error{Rule: "invalid", Op: "loop", File: f, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if l.Var < 0 || l.Var >= c.k.NumVars {
		return nil, bad("loop variable %d out of range (kernel has %d)", l.Var, c.k.NumVars)
	}
	if c.loopVar[l.Var] {
		return nil, bad("loop variable %d reused by a nested loop", l.Var)
	}
	if l.Step <= 0 {
		return nil, bad("loop step %d must be positive", l.Step)
	}
	c.loopVar[l.Var] = true
	body, err := c.block(l.Body)
	delete(c.loopVar, l.Var)
	if err != nil {
		return nil, err
	}
	cl := &cloop{v: l.Var, start: l.Start, stop: l.Stop, step: l.Step, body: body, loc: l.Loc}
	cl.affine = l.Kind == irpb.LoopKind_AFFINE
	return cl, nil
}

// parallelSafe decides whether an affine loop's iterations can run
// concurrently, each worker with its own storage for the loop's locals: the
// body must not print, draw random numbers, use atomics or collectives, or
// touch physically placed tensors, and every on-chip / private tensor it
// writes must be local to one iteration: accessed nowhere outside the body
// (total: the kernel's access count per tensor) and, in every iteration,
// first accessed by an instruction that overwrites the whole tensor without
// reading it (an alloc, a memset, a full-tile copy or DMA, …). Iterations
// then never see each other's values, so any schedule gives the same bits.
func parallelSafe(body []stmt, v int32, step int64, total map[int32]int) (bool, []int32) {
	written := map[int32]bool{}
	hbmWritten, hbmRead := map[int32]bool{}, map[int32]bool{}
	inner := map[int32]bool{} // loop variables of loops inside the body
	var innerVars func(ss []stmt)
	innerVars = func(ss []stmt) {
		for _, s := range ss {
			if s.loop != nil {
				inner[s.loop.v] = true
				innerVars(s.loop.body)
			}
		}
	}
	innerVars(body)
	ok := true
	var walk func(ss []stmt)
	walk = func(ss []stmt) {
		for _, s := range ss {
			if s.loop != nil {
				walk(s.loop.body)
				continue
			}
			ci := s.inst
			switch ci.op {
			case "print", "rand", "dropout", "random_seed", "atomic_rmw", "all_reduce",
				"cc_all_reduce", "cc_all_gather", "cc_reduce_scatter", "cc_all_to_all", "cc_collective_permute":
				ok = false
			case "dma":
				if ci.aux.(dmaAux).rmw != nil {
					ok = false // read-modify-write of HBM may overlap across iterations
				}
			}
			if instRegs(ci).stateful() {
				ok = false // engine accumulator registers carry state between iterations
			}
			ci.accesses(func(a *cacc, _ bool) {
				if a.t.Allocation != nil && (a.t.Memory == irpb.Memory_SBUF || a.t.Memory == irpb.Memory_PSUM) {
					ok = false
				}
			})
			for _, d := range ci.dst {
				if isHBM(d.t) {
					if !disjointPerIteration(d, v, step, inner) {
						// Iterations may write the same HBM elements (the
						// same tile, overlapping tiles, data-dependent
						// indices): keep program order, so the last
						// iteration's write wins as in a serial run.
						ok = false
					}
					hbmWritten[d.tensor] = true
					continue
				}
				written[d.tensor] = true
			}
			ci.accesses(func(a *cacc, write bool) {
				if !write && isHBM(a.t) {
					hbmRead[a.tensor] = true
				}
			})
		}
	}
	walk(body)
	for t := range hbmWritten {
		if hbmRead[t] {
			ok = false // an iteration could read what another one writes
		}
	}
	if !ok {
		return false, nil
	}
	inside := map[int32]int{}
	countAccesses(body, inside)
	var locals []int32
	for id := range written {
		if partitioned(body, v, id) {
			continue // each iteration its own slice of the shared storage
		}
		if inside[id] != total[id] {
			return false, nil // read or written outside the loop too
		}
		if found, over := firstAccess(body, id); !found || !over {
			return false, nil
		}
		locals = append(locals, id)
	}
	slices.Sort(locals)
	return true, locals
}

// partitioned: every access of tensor id in the body stays inside the
// slice that loop variable v selects along one dimension: there the index
// is c + s·v + (tile terms spanning [0, |s|)), the same c and s for every
// access, so distinct iterations touch disjoint elements and may share the
// storage (a loop filling rhs_tiles[k], or accumulating into
// result_tiles[bm] += …).
func partitioned(body []stmt, v int32, id int32) bool {
	type sel struct {
		dim  int
		c, s int64
	}
	var first *sel
	ok := true
	var walk func(ss []stmt)
	walk = func(ss []stmt) {
		for _, st := range ss {
			if st.loop != nil {
				walk(st.loop.body)
				continue
			}
			st.inst.accesses(func(a *cacc, _ bool) {
				if a.tensor != id || !ok {
					return
				}
				if len(a.dyn) > 0 {
					ok = false
					return
				}
				match := func(d int) (sel, bool) {
					ix := &a.idx[d]
					if len(ix.vt) != 1 || ix.vt[0].kind != irpb.TermKind_LOOP_VAR || ix.vt[0].id != v || ix.vt[0].coef == 0 {
						return sel{}, false
					}
					sc := ix.vt[0].coef
					lo, hi := int64(0), int64(0)
					for k, c := range ix.tile {
						ext := c * int64(a.shape[k]-1)
						if ext < 0 {
							lo += ext
						} else {
							hi += ext
						}
					}
					if lo < 0 || hi >= max(sc, -sc) {
						return sel{}, false
					}
					return sel{d, ix.c, sc}, true
				}
				if first == nil {
					for d := range a.idx {
						if m, good := match(d); good {
							first = &m
							return
						}
					}
					ok = false
					return
				}
				if first.dim >= len(a.idx) {
					ok = false
					return
				}
				if m, good := match(first.dim); !good || m != *first {
					ok = false
				}
			})
		}
	}
	walk(body)
	return ok && first != nil
}

// accesses calls f on every access of the instruction, the index tensors of
// dynamic accesses included (those are reads).
func (ci *cinst) accesses(f func(a *cacc, write bool)) {
	var rec func(a *cacc, write bool)
	rec = func(a *cacc, write bool) {
		f(a, write)
		for _, d := range a.dyn {
			rec(d.acc, false)
		}
	}
	for _, a := range ci.src {
		rec(a, false)
	}
	for _, a := range ci.dst {
		rec(a, true)
	}
}

func countAccesses(ss []stmt, m map[int32]int) {
	for _, s := range ss {
		if s.loop != nil {
			countAccesses(s.loop.body, m)
			continue
		}
		s.inst.accesses(func(a *cacc, _ bool) { m[a.tensor]++ })
	}
}

// firstAccess finds the first instruction to touch tensor id when ss runs
// (loops without iterations skipped) and reports whether it overwrites the
// whole tensor without reading it.
func firstAccess(ss []stmt, id int32) (found, overwrites bool) {
	for _, s := range ss {
		if l := s.loop; l != nil {
			if l.stop <= l.start {
				continue
			}
			if found, over := firstAccess(l.body, id); found {
				return true, over
			}
			continue
		}
		ci := s.inst
		reads, writes := false, 0
		ci.accesses(func(a *cacc, w bool) {
			if a.tensor != id {
				return
			}
			if w {
				writes++
			} else {
				reads = true
			}
		})
		if reads {
			return true, false
		}
		if writes == 0 {
			continue
		}
		if ci.op == "alloc" && ci.allocElided {
			continue // the next instruction overwrites the tensor: it decides
		}
		if ci.op == "alloc" && ci.allocCovered {
			return true, true // the next loop overwrites it whole before any read
		}
		return true, writes == 1 && ci.dst[0].tensor == id && overwritesDst0(ci)
	}
	return false, false
}

// overwritesDst0: the instruction writes every element of dst[0]'s tensor
// and reads none of it (ops whose write set is their whole dst tile).
func overwritesDst0(ci *cinst) bool {
	switch ci.op {
	case "alloc", "memset", "iota", "dma", "dma_transpose", "tensor_copy", "activation", "tensor_tensor",
		"tensor_scalar", "scalar_tensor_tensor", "tensor_reduce", "tensor_partition_reduce", "transpose",
		"select", "affine_select", "matmul":
	default:
		return false
	}
	if len(ci.mask) > 0 || !coversWhole(ci.dst[0]) || ci.dst[0].t.Allocation != nil {
		return false
	}
	if _, rmw := ci.in.Attrs["dst_rmw_op"]; rmw {
		return false
	}
	if mm, ok := ci.aux.(mmAux); ok && mm.accumulate {
		return false
	}
	return true
}

// markParallel decides, after the whole kernel is compiled, which affine
// loops may fan out (parallelSafe needs the kernel-wide access counts).
func markParallel(ss []stmt, total map[int32]int) {
	for _, s := range ss {
		if l := s.loop; l != nil {
			if l.affine {
				l.parallel, l.locals = parallelSafe(l.body, l.v, l.step, total)
			}
			markParallel(l.body, total)
		}
	}
}

// affine compiles an Affine over a tile of rank r.
func (c *compiler) affine(a *irpb.Affine, r int, what string) (caff, error) {
	out := caff{tile: make([]int64, r)}
	if a == nil {
		return out, nil
	}
	out.c = a.Constant
	for _, t := range a.Terms {
		switch t.Kind {
		case irpb.TermKind_TILE_AXIS:
			if t.Id < 0 || int(t.Id) >= r {
				return out, fmt.Errorf("%s: tile axis %d out of range (tile rank %d)", what, t.Id, r)
			}
			out.tile[t.Id] += t.Coef
		case irpb.TermKind_LOOP_VAR:
			if !c.loopVar[t.Id] {
				return out, fmt.Errorf("%s: loop variable %d used outside its loop", what, t.Id)
			}
			out.vt = append(out.vt, term{t.Kind, t.Id, t.Coef})
		case irpb.TermKind_PROGRAM_ID:
			if t.Id < 0 || int(t.Id) >= len(c.k.Grid) {
				return out, fmt.Errorf("%s: program_id axis %d but the grid has %d dimensions", what, t.Id, len(c.k.Grid))
			}
			out.vt = append(out.vt, term{t.Kind, t.Id, t.Coef})
		default:
			return out, fmt.Errorf("%s: unknown term kind %v", what, t.Kind)
		}
	}
	return out, nil
}

func (c *compiler) access(a *irpb.Access, what string) (*cacc, error) {
	if a == nil {
		return nil, fmt.Errorf("%s is missing", what)
	}
	if a.Tensor < 0 || int(a.Tensor) >= len(c.k.Tensors) {
		return nil, fmt.Errorf("%s: tensor id %d out of range", what, a.Tensor)
	}
	t := c.k.Tensors[a.Tensor]
	ca := &cacc{tensor: a.Tensor, t: t, dt: dtype.Type(t.Dtype), tstr: tensor.Strides(t.Shape)}
	ca.n = 1
	for _, s := range a.Shape {
		if s <= 0 || s > 1<<24 {
			return nil, fmt.Errorf("%s (%s): tile shape %v has a non-positive or huge extent", what, t.Name, a.Shape)
		}
		ca.shape = append(ca.shape, int(s))
		ca.n *= int(s)
		if int64(ca.n) > MaxTileElements {
			return nil, fmt.Errorf("%s (%s): tile %v too large", what, t.Name, a.Shape)
		}
	}
	if len(a.Index) != len(t.Shape) {
		return nil, fmt.Errorf("%s (%s): %d index expressions for a rank-%d tensor", what, t.Name, len(a.Index), len(t.Shape))
	}
	for d, ix := range a.Index {
		af, err := c.affine(ix, len(ca.shape), fmt.Sprintf("%s (%s) index %d", what, t.Name, d))
		if err != nil {
			return nil, err
		}
		ca.idx = append(ca.idx, af)
	}
	if len(a.DynamicDim) != len(a.Dynamic) {
		return nil, fmt.Errorf("%s (%s): %d dynamic dims but %d dynamic tiles", what, t.Name, len(a.DynamicDim), len(a.Dynamic))
	}
	for i, d := range a.DynamicDim {
		if d < 0 || int(d) >= len(t.Shape) {
			return nil, fmt.Errorf("%s (%s): dynamic dim %d out of range", what, t.Name, d)
		}
		da, err := c.access(a.Dynamic[i], fmt.Sprintf("%s dynamic index %d", what, i))
		if err != nil {
			return nil, err
		}
		if len(da.dyn) > 0 {
			return nil, fmt.Errorf("%s: a dynamic index tile cannot itself be dynamically indexed", what)
		}
		if !da.dt.IsInteger() {
			return nil, fmt.Errorf("%s: dynamic index tile %s must have an integer dtype, has %v", what, da.t.Name, da.dt)
		}
		if !broadcastsTo(da.shape, ca.shape) {
			return nil, fmt.Errorf("%s: dynamic index tile %v does not broadcast to the tile %v", what, da.shape, ca.shape)
		}
		ca.dyn = append(ca.dyn, cdyn{int(d), da})
	}
	return ca, nil
}

// alignSrc places a source tile against the domain: leading size-1 axes
// beyond the domain's rank are dropped (drop of them), and the rest align
// numpy-style to the right (off = domain axis of the first kept axis) — or,
// when that does not broadcast, to the left, partition axis to partition
// axis, so a (P,1) per-partition operand meets a (P,F1,F2) tile.
func alignSrc(s, dom []int) (drop, off int, ok bool) {
	for len(s)-drop > len(dom) {
		if s[drop] != 1 {
			return 0, 0, false
		}
		drop++
	}
	kept := s[drop:]
	fits := func(off int) bool {
		for i, x := range kept {
			if x != 1 && x != dom[off+i] {
				return false
			}
		}
		return true
	}
	if o := len(dom) - len(kept); fits(o) {
		return drop, o, true
	}
	if fits(0) {
		return drop, 0, true
	}
	return 0, 0, false
}

// broadcastsTo reports whether a tile of shape s broadcasts to dom (see
// alignSrc).
func broadcastsTo(s, dom []int) bool {
	_, _, ok := alignSrc(s, dom)
	return ok
}

func (c *compiler) preds(ps []*irpb.Predicate, r int, what string) ([]cpred, error) {
	var out []cpred
	for i, p := range ps {
		if p.Cmp < irpb.Cmp_LT || p.Cmp > irpb.Cmp_NE {
			return nil, fmt.Errorf("%s %d: unknown comparison %v", what, i, p.Cmp)
		}
		e, err := c.affine(p.Expr, r, fmt.Sprintf("%s %d", what, i))
		if err != nil {
			return nil, err
		}
		out = append(out, cpred{e, p.Cmp})
	}
	return out, nil
}

func (c *compiler) inst(x *irpb.Instruction) (*cinst, error) {
	f, line := locOf(c.k, x.Loc)
	ci := &cinst{op: x.Op, in: x, file: f, line: line}
	spec, ok := opTable[x.Op]
	if !ok {
		return nil, ci.errf("invalid", "unknown instruction %q", x.Op)
	}
	for i, d := range x.Dst {
		a, err := c.access(d, fmt.Sprintf("dst[%d]", i))
		if err != nil {
			return nil, ci.errf("invalid", "%v", err)
		}
		ci.dst = append(ci.dst, a)
	}
	for i, s := range x.Src {
		a, err := c.access(s, fmt.Sprintf("src[%d]", i))
		if err != nil {
			return nil, ci.errf("invalid", "%v", err)
		}
		ci.src = append(ci.src, a)
	}
	if len(ci.dst) < spec.minDst || len(ci.dst) > spec.maxDst {
		return nil, ci.errf("invalid", "takes %d..%d destinations, has %d", spec.minDst, spec.maxDst, len(ci.dst))
	}
	if len(ci.src) < spec.minSrc || len(ci.src) > spec.maxSrc {
		return nil, ci.errf("invalid", "takes %d..%d sources, has %d", spec.minSrc, spec.maxSrc, len(ci.src))
	}
	for _, d := range ci.dst {
		if d.t.Role == irpb.TensorRole_CONSTANT || (d.t.Role == irpb.TensorRole_PARAM && !d.t.Mutable) {
			return nil, ci.errf("invalid", "writes the immutable tensor %s", d.t.Name)
		}
	}
	dom := 0
	if len(ci.dst) > 0 {
		dom = len(ci.dst[0].shape)
	}
	if spec.domainSrc && len(ci.src) > 0 {
		dom = len(ci.src[0].shape)
	}
	var err error
	if ci.mask, err = c.preds(x.Mask, dom, "mask predicate"); err != nil {
		return nil, ci.errf("invalid", "%v", err)
	}
	if ci.preds, err = c.preds(x.Preds, dom, "predicate"); err != nil {
		return nil, ci.errf("invalid", "%v", err)
	}
	for i, e := range x.Exprs {
		a, err := c.affine(e, dom, fmt.Sprintf("exprs[%d]", i))
		if err != nil {
			return nil, ci.errf("invalid", "%v", err)
		}
		ci.exprs = append(ci.exprs, a)
	}
	if x.Op == "matmul" {
		for _, a := range ci.src {
			if a.t.Memory == irpb.Memory_SBUF && a.dt.IsFloat() && a.t.Allocation == nil && len(a.dyn) == 0 {
				if c.p.f32Store == nil {
					c.p.f32Store = map[int32]bool{}
				}
				c.p.f32Store[a.tensor] = true
			}
		}
	}
	switch x.Op {
	case "all_reduce":
		c.p.hasCollectives = true
	case "atomic_rmw", "print", "rand", "dropout", "random_seed":
		c.p.serialInstances = true
	}
	prep := spec.prep
	if ir.IsDeviceCollective(x.Op) {
		c.p.hasDeviceCollectives, c.p.serialInstances = true, true
		prep = prepDeviceCollective(c)
	}
	if err := prep(ci); err != nil {
		var se *Error
		if ok := asErr(err, &se); ok {
			return nil, se
		}
		return nil, ci.errf("invalid", "%v", err)
	}
	ci.run = spec.run
	return ci, nil
}

func asErr(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

// opSpec describes an opcode: operand counts, whether its domain is src[0]'s
// tile, a prepare step (attr parsing, static shape checks) and the runner.
type opSpec struct {
	minDst, maxDst, minSrc, maxSrc int
	domainSrc                      bool
	prep                           func(ci *cinst) error
	run                            func(in *instance, ci *cinst) error
}

var opTable map[string]opSpec

// attribute helpers -------------------------------------------------------

func (ci *cinst) attr(name string) (*irpb.Attr, bool) {
	a, ok := ci.in.Attrs[name]
	return a, ok && a != nil
}

func (ci *cinst) str(name, def string) (string, error) {
	a, ok := ci.attr(name)
	if !ok {
		return def, nil
	}
	s, isS := a.Value.(*irpb.Attr_S)
	if !isS {
		return "", fmt.Errorf("attribute %s must be a string", name)
	}
	return s.S, nil
}

func (ci *cinst) flt(name string, def float64) (float64, error) {
	a, ok := ci.attr(name)
	if !ok {
		return def, nil
	}
	switch v := a.Value.(type) {
	case *irpb.Attr_F:
		return v.F, nil
	case *irpb.Attr_I:
		return float64(v.I), nil
	case *irpb.Attr_B:
		if v.B {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("attribute %s must be a number", name)
}

func (ci *cinst) integer(name string, def int64) (int64, error) {
	a, ok := ci.attr(name)
	if !ok {
		return def, nil
	}
	switch v := a.Value.(type) {
	case *irpb.Attr_I:
		return v.I, nil
	case *irpb.Attr_F:
		if v.F == float64(int64(v.F)) {
			return int64(v.F), nil
		}
	}
	return 0, fmt.Errorf("attribute %s must be an integer", name)
}

func (ci *cinst) boolean(name string, def bool) (bool, error) {
	a, ok := ci.attr(name)
	if !ok {
		return def, nil
	}
	switch v := a.Value.(type) {
	case *irpb.Attr_B:
		return v.B, nil
	case *irpb.Attr_I:
		return v.I != 0, nil
	}
	return false, fmt.Errorf("attribute %s must be a bool", name)
}

func (ci *cinst) ints(name string) ([]int64, bool, error) {
	a, ok := ci.attr(name)
	if !ok {
		return nil, false, nil
	}
	switch v := a.Value.(type) {
	case *irpb.Attr_Ints:
		return v.Ints.GetV(), true, nil
	case *irpb.Attr_I:
		return []int64{v.I}, true, nil
	}
	return nil, false, fmt.Errorf("attribute %s must be a list of integers", name)
}

func isHBM(t *irpb.Tensor) bool {
	return t.Memory == irpb.Memory_SHARED_HBM || t.Memory == irpb.Memory_PRIVATE_HBM || t.Role == irpb.TensorRole_PARAM
}

// disjointPerIteration proves that the elements access a writes in one
// iteration of loop v (stepping by step) are written by no other iteration:
// some dimension's index moves by |coef * step| per iteration while the rest
// of that index (tile axes) spans less than that, and no loop nested in the
// body moves it. Data-dependent indices prove nothing.
func disjointPerIteration(a *cacc, v int32, step int64, inner map[int32]bool) bool {
	if len(a.dyn) > 0 {
		return false
	}
	for _, ix := range a.idx {
		var move int64
		nested := false
		for _, t := range ix.vt {
			switch {
			case t.kind == irpb.TermKind_LOOP_VAR && t.id == v:
				move += t.coef * step
			case t.kind == irpb.TermKind_LOOP_VAR && inner[t.id]:
				nested = nested || t.coef != 0
			}
		}
		if move == 0 || nested {
			continue
		}
		var span int64
		for j, c := range ix.tile {
			if n := int64(a.shape[j]); n > 1 {
				span += abs64(c) * (n - 1)
			}
		}
		if span < abs64(move) {
			return true
		}
	}
	return false
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
