package golden

// -S/--spmd: global inputs in, global outputs out, for modules that JAX
// lowers but XLA has not partitioned yet. Everything outside manual
// regions computes on global values (a sharding annotation does not change
// a value); a manual region (shard_map) runs once per device on that
// device's block of each input, with its collectives exchanged between the
// devices, and its results are assembled from the blocks by their output
// shardings.
//
// A manual region is everything computed from its entry markers up to its
// exit markers:
//
//	Shardy: custom-call "xla.sdy.GlobalToLocalShape" (xla.sdy.in_shardings,
//	  xla.sdy.manual_axes; the mesh in the module's xla.sdy.meshes) ... a
//	  call to xla.sdy.manual_computation_body* ... "xla.sdy.LocalToGlobalShape"
//	  (xla.sdy.out_shardings).
//	GSPMD: "SPMDFullToShardShape" (the input sharding on its operand, usually
//	  a "Sharding" custom-call) ... "SPMDShardToFullShape" (its sharding={...}).
//
// Legalization outlines each region into a computation and replaces it by
// one custom-call manualTarget, whose handler runs the devices.

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

const (
	manualTarget   = "goldtrace.ManualComputation"
	sdyGlobalToLoc = "xla.sdy.GlobalToLocalShape"
	sdyLocToGlobal = "xla.sdy.LocalToGlobalShape"
	sdyFuncResult  = "xla.sdy.FuncResultSharding"
	gspmdFullShard = "SPMDFullToShardShape"
	gspmdShardFull = "SPMDShardToFullShape"
)

func init() {
	eval.RegisterCustomCall(manualTarget, evalManual)
	// A function result's sharding is the identity on global values.
	eval.RegisterCustomCall(sdyFuncResult, func(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
		if len(args) != 1 {
			return eval.Value{}, fmt.Errorf("takes one operand, got %d", len(args))
		}
		return args[0], nil
	})
	// Propagation hints of Shardy's round trip: the identity, or (a sharding
	// group, which has no result) an empty tuple.
	eval.RegisterCustomCall("xla.sdy.PropagationBarrier", func(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
		if len(args) != 1 {
			return eval.Value{}, fmt.Errorf("takes one operand, got %d", len(args))
		}
		return args[0], nil
	})
	eval.RegisterCustomCall("xla.sdy.ShardingGroup", func(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
		if in.Shape.IsTuple() && len(in.Shape.Tuple) == 0 {
			return eval.TupleValue(), nil
		}
		if len(args) == 1 {
			return args[0], nil
		}
		return eval.Value{}, fmt.Errorf("a sharding group of shape %v", in.Shape)
	})
	for _, t := range []string{sdyGlobalToLoc, sdyLocToGlobal} {
		eval.RegisterCustomCall(t, func(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
			return eval.Value{}, eval.Unsupported("custom-call %q outside -S/--spmd (a shard_map region runs on global inputs with -S)", in.CustomCallTarget)
		})
	}
}

func isEntryMarker(in *hlo.Instruction) bool {
	return in.Opcode == "custom-call" && (in.CustomCallTarget == sdyGlobalToLoc || in.CustomCallTarget == gspmdFullShard)
}

func isExitMarker(in *hlo.Instruction) bool {
	return in.Opcode == "custom-call" && (in.CustomCallTarget == sdyLocToGlobal || in.CustomCallTarget == gspmdShardFull)
}

// placement says which block of a global array each run of a manual
// region holds: Of[run][d] is the block index along dimension d of
// Blocks[d] blocks, each of the local shape's size (the last may be cut off
// by the global shape: padding).
type placement struct {
	Blocks []int64
	Of     [][]int64
}

// manualSpec is what the handler of one outlined region needs.
type manualSpec struct {
	Devices int64   // device ids are 0..Devices-1
	Runs    []int64 // the device id each run emulates
	Entries []manualEntry
	Exits   []manualExit
}

// manualEntry is one entry marker: custom-call operands Operands (global
// arrays) become one body parameter of the local shapes Local (a tuple when
// the marker's result is one).
type manualEntry struct {
	Operands []int
	Local    []hlo.Shape
	Place    []placement
	Tuple    bool
}

// manualExit is one exit marker: body results Results (local arrays)
// become one element of the custom-call's tuple result.
type manualExit struct {
	Results []int
	Global  []hlo.Shape
	Place   []placement
	Tuple   bool
}

// manualSpecs holds the spec of every outlined region custom-call of the
// modules being run (keyed by the instruction; released by Run).
var manualSpecs sync.Map

// outlineManualRegions rewrites every manual region of m (a private copy).
// It returns the region custom-calls created, so their specs can be
// released after the run.
func outlineManualRegions(m *hlo.Module) ([]*hlo.Instruction, error) {
	var meshes map[string]*hlo.Mesh
	if s, ok := m.FrontendAttrs["xla.sdy.meshes"]; ok {
		var err error
		if meshes, err = parseSdyMeshes(s); err != nil {
			return nil, fmt.Errorf("xla.sdy.meshes: %w", err)
		}
	}
	o := &outliner{m: m, meshes: meshes, names: map[string]bool{}}
	for _, c := range m.Computations {
		o.names[c.Name] = true
		for _, in := range c.Instructions {
			o.names[in.Name] = true
		}
	}
	comps := slices.Clone(m.Computations)
	for _, c := range comps {
		for {
			found, err := o.outlineOne(c)
			if err != nil {
				for _, in := range o.created {
					manualSpecs.Delete(in)
				}
				return nil, fmt.Errorf("computation %s: %w", c.Name, err)
			}
			if !found {
				break
			}
		}
	}
	return o.created, nil
}

type outliner struct {
	m       *hlo.Module
	meshes  map[string]*hlo.Mesh
	names   map[string]bool
	seq     int
	created []*hlo.Instruction
}

func (o *outliner) fresh(base string) string {
	for {
		o.seq++
		n := fmt.Sprintf("%s.spmd.%d", base, o.seq)
		if !o.names[n] {
			o.names[n] = true
			return n
		}
	}
}

// outlineOne outlines the first manual region of c, if any.
func (o *outliner) outlineOne(c *hlo.Computation) (bool, error) {
	var first *hlo.Instruction
	for _, in := range c.Instructions {
		if isEntryMarker(in) {
			first = in
			break
		}
	}
	// A region without inputs (shard_map of a function of no arguments)
	// has no entry marker: it is its exit marker and what that computes
	// from device ids and constants.
	var exitOnly *hlo.Instruction
	if first == nil {
		for _, in := range c.Instructions {
			if isExitMarker(in) {
				exitOnly = in
				break
			}
		}
		if exitOnly == nil {
			return false, nil
		}
	}
	users := map[*hlo.Instruction][]*hlo.Instruction{}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			users[op] = append(users[op], in)
		}
	}
	// The region: everything reachable from the entries, up to the exits;
	// entries feeding region instructions join.
	entries := map[*hlo.Instruction]bool{}
	region := map[*hlo.Instruction]bool{}
	exits := map[*hlo.Instruction]bool{}
	var work []*hlo.Instruction
	if first != nil {
		entries[first] = true
		work = append(work, first)
	} else {
		exits[exitOnly] = true
		first = exitOnly // names the region in messages
	}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		for _, u := range users[x] {
			switch {
			case isExitMarker(u):
				exits[u] = true
			case isEntryMarker(u):
				return false, fmt.Errorf("manual region of %%%s: entry marker %%%s inside it (nested manual computations are not supported)", first.Name, u.Name)
			case !region[u]:
				region[u] = true
				work = append(work, u)
				for _, op := range u.Operands {
					if isEntryMarker(op) && !entries[op] {
						entries[op] = true
						work = append(work, op)
					}
				}
			}
		}
	}
	if len(exits) == 0 {
		return false, fmt.Errorf("manual region of %%%s has no exit marker (%s or %s)", first.Name, sdyLocToGlobal, gspmdShardFull)
	}
	for x := range region {
		if x == c.Root {
			return false, fmt.Errorf("manual region of %%%s: %%%s is the computation's root (the region must end in exit markers)", first.Name, x.Name)
		}
		for _, u := range users[x] {
			if !region[u] && !exits[u] {
				return false, fmt.Errorf("manual region of %%%s: %%%s is used outside the region by %%%s", first.Name, x.Name, u.Name)
			}
		}
	}
	pulledMemo := map[*hlo.Instruction]bool{}
	for e := range exits {
		for _, op := range e.Operands {
			if !region[op] && !entries[op] && !deviceLocal(op, pulledMemo) {
				return false, fmt.Errorf("exit marker %%%s reads %%%s from outside its manual region", e.Name, op.Name)
			}
		}
	}
	inOrder := func(set map[*hlo.Instruction]bool) []*hlo.Instruction {
		var out []*hlo.Instruction
		for _, in := range c.Instructions {
			if set[in] {
				out = append(out, in)
			}
		}
		return out
	}
	entryList, regionList, exitList := inOrder(entries), inOrder(region), inOrder(exits)

	spec, err := o.spec(entryList, exitList)
	if err != nil {
		return false, err
	}

	// The body: one parameter per entry, then one per outside operand.
	body := &hlo.Computation{Name: o.fresh("manual_region")}
	clone := map[*hlo.Instruction]*hlo.Instruction{}
	var ccOperands []*hlo.Instruction
	for i, e := range entryList {
		p := &hlo.Instruction{Name: o.fresh(e.Name), Opcode: "parameter", ParameterNumber: int64(i), Shape: e.Shape, Parent: body}
		body.Params = append(body.Params, p)
		body.Instructions = append(body.Instructions, p)
		clone[e] = p
		spec.Entries[i].Operands = nil
		for _, op := range e.Operands {
			spec.Entries[i].Operands = append(spec.Entries[i].Operands, len(ccOperands))
			ccOperands = append(ccOperands, op)
		}
	}
	// Operands from outside the region: what depends only on constants and
	// on the device (partition-id, replica-id: an inlined axis_index) is
	// recomputed inside it; anything else is a global value every device
	// gets whole.
	outside := map[*hlo.Instruction]*hlo.Instruction{}
	pulled := map[*hlo.Instruction]bool{}
	var pull func(x *hlo.Instruction)
	pull = func(x *hlo.Instruction) {
		if clone[x] != nil {
			return
		}
		for _, op := range x.Operands {
			pull(op)
		}
		nx := *x
		nx.Name, nx.Parent, nx.ControlPredecessors = o.fresh(x.Name), body, nil
		nx.Operands = make([]*hlo.Instruction, len(x.Operands))
		for i, op := range x.Operands {
			nx.Operands[i] = clone[op]
		}
		clone[x] = &nx
		body.Instructions = append(body.Instructions, &nx)
	}
	for _, x := range regionList {
		for _, op := range x.Operands {
			if region[op] || entries[op] || outside[op] != nil || clone[op] != nil {
				continue
			}
			if deviceLocal(op, pulled) {
				pull(op)
				continue
			}
			p := &hlo.Instruction{Name: o.fresh(op.Name), Opcode: "parameter", ParameterNumber: int64(len(body.Params)), Shape: op.Shape, Parent: body}
			body.Params = append(body.Params, p)
			body.Instructions = append(body.Instructions, p)
			outside[op] = p
			ccOperands = append(ccOperands, op)
		}
	}
	for _, x := range regionList {
		nx := *x
		nx.Parent = body
		nx.Operands = make([]*hlo.Instruction, len(x.Operands))
		for i, op := range x.Operands {
			if v := clone[op]; v != nil {
				nx.Operands[i] = v
			} else {
				nx.Operands[i] = outside[op]
			}
		}
		nx.ControlPredecessors = nil
		for _, cp := range x.ControlPredecessors {
			if v := clone[cp]; v != nil {
				nx.ControlPredecessors = append(nx.ControlPredecessors, v)
			}
		}
		clone[x] = &nx
		body.Instructions = append(body.Instructions, &nx)
	}
	var results []*hlo.Instruction
	for k, e := range exitList {
		spec.Exits[k].Results = nil
		for _, op := range e.Operands {
			if clone[op] == nil {
				pull(op) // device-local, computed per device
			}
			spec.Exits[k].Results = append(spec.Exits[k].Results, len(results))
			results = append(results, clone[op])
		}
	}
	rootShape := hlo.Shape{Elem: dtype.Tuple, Tuple: []hlo.Shape{}}
	for _, r := range results {
		rootShape.Tuple = append(rootShape.Tuple, r.Shape)
	}
	root := &hlo.Instruction{Name: o.fresh("manual_results"), Opcode: "tuple", Operands: results, Shape: rootShape, Parent: body}
	body.Instructions = append(body.Instructions, root)
	body.Root = root

	// The custom-call in the region's place, and one get-tuple-element per exit.
	ccShape := hlo.Shape{Elem: dtype.Tuple, Tuple: []hlo.Shape{}}
	for _, e := range exitList {
		ccShape.Tuple = append(ccShape.Tuple, e.Shape)
	}
	cc := &hlo.Instruction{Name: o.fresh("manual_computation"), Opcode: "custom-call", CustomCallTarget: manualTarget,
		Operands: ccOperands, Shape: ccShape, Called: []*hlo.Computation{body}, Parent: c, Metadata: first.Metadata}
	repl := map[*hlo.Instruction]*hlo.Instruction{}
	var gtes []*hlo.Instruction
	for k, e := range exitList {
		g := &hlo.Instruction{Name: e.Name, Opcode: "get-tuple-element", TupleIndex: int64(k), Operands: []*hlo.Instruction{cc},
			Shape: e.Shape, Parent: c, Metadata: e.Metadata}
		repl[e] = g
		gtes = append(gtes, g)
	}
	var rest []*hlo.Instruction
	for _, in := range c.Instructions {
		if entries[in] || region[in] || exits[in] {
			continue
		}
		for i, op := range in.Operands {
			if r := repl[op]; r != nil {
				in.Operands[i] = r
			}
		}
		for i, op := range in.ControlPredecessors {
			if r := repl[op]; r != nil {
				in.ControlPredecessors[i] = r
			}
		}
		rest = append(rest, in)
	}
	if r := repl[c.Root]; r != nil {
		c.Root = r
	}
	c.Instructions = topoOrder(append(rest, append([]*hlo.Instruction{cc}, gtes...)...))
	// The body goes before the computation that calls it.
	at := slices.Index(o.m.Computations, c)
	o.m.Computations = slices.Insert(o.m.Computations, at, body)
	manualSpecs.Store(cc, spec)
	o.created = append(o.created, cc)
	return true, nil
}

// deviceLocal reports whether x is computed from constants and device ids
// alone (so each device can compute it for itself).
func deviceLocal(x *hlo.Instruction, memo map[*hlo.Instruction]bool) bool {
	if v, ok := memo[x]; ok {
		return v
	}
	ok := false
	switch x.Opcode {
	case "constant", "iota", "partition-id", "replica-id":
		ok = true
	case "parameter", "custom-call", "rng", "rng-bit-generator", "rng-get-and-update-state", "infeed", "recv", "after-all":
	default:
		ok = len(x.Operands) > 0 && len(x.Called) == 0 && !strings.HasPrefix(x.Opcode, "all-") &&
			!strings.HasPrefix(x.Opcode, "collective-") && x.Opcode != "reduce-scatter"
		for _, op := range x.Operands {
			ok = ok && deviceLocal(op, memo)
		}
	}
	memo[x] = ok
	return ok
}

// topoOrder orders instructions so operands come first, keeping the given
// order where it already does.
func topoOrder(list []*hlo.Instruction) []*hlo.Instruction {
	in := map[*hlo.Instruction]bool{}
	for _, x := range list {
		in[x] = true
	}
	done := map[*hlo.Instruction]bool{}
	out := make([]*hlo.Instruction, 0, len(list))
	var visit func(x *hlo.Instruction)
	visit = func(x *hlo.Instruction) {
		if done[x] || !in[x] {
			return
		}
		done[x] = true
		for _, op := range x.Operands {
			visit(op)
		}
		for _, cp := range x.ControlPredecessors {
			visit(cp)
		}
		out = append(out, x)
	}
	for _, x := range list {
		visit(x)
	}
	return out
}

// spec works out the devices and the block placements of a region.
func (o *outliner) spec(entries, exits []*hlo.Instruction) (*manualSpec, error) {
	spec := &manualSpec{}
	all := append(slices.Clone(entries), exits...)
	shardy := all[0].CustomCallTarget == sdyGlobalToLoc || all[0].CustomCallTarget == sdyLocToGlobal
	for _, x := range append(slices.Clone(entries), exits...) {
		if (x.CustomCallTarget == sdyGlobalToLoc || x.CustomCallTarget == sdyLocToGlobal) != shardy {
			return nil, fmt.Errorf("manual region mixes Shardy and GSPMD markers (%%%s)", x.Name)
		}
	}
	if shardy {
		return o.sdySpec(spec, entries, exits)
	}
	return o.gspmdSpec(spec, entries, exits)
}

func arrayLeaves(s hlo.Shape) ([]hlo.Shape, bool) {
	if s.IsTuple() {
		return s.Tuple, true
	}
	return []hlo.Shape{s}, false
}

func (o *outliner) sdySpec(spec *manualSpec, entries, exits []*hlo.Instruction) (*manualSpec, error) {
	name := append(slices.Clone(entries), exits...)[0].Name
	if o.meshes == nil {
		return nil, fmt.Errorf("%%%s: the module has no xla.sdy.meshes frontend attribute", name)
	}
	var mesh *hlo.Mesh
	var manual []string
	type marker struct {
		in     *hlo.Instruction
		attr   string
		shards []*sdySharding
	}
	var marks []marker
	for _, x := range append(slices.Clone(entries), exits...) {
		attr := "xla.sdy.in_shardings"
		if x.CustomCallTarget == sdyLocToGlobal {
			attr = "xla.sdy.out_shardings"
		}
		sh, err := parseSdyShardings(x.FrontendAttrs[attr], o.meshes)
		if err != nil {
			return nil, fmt.Errorf("%%%s %s: %w", x.Name, attr, err)
		}
		ma, err := parseSdyManualAxes(x.FrontendAttrs["xla.sdy.manual_axes"])
		if err != nil {
			return nil, fmt.Errorf("%%%s xla.sdy.manual_axes: %w", x.Name, err)
		}
		if manual == nil {
			manual = ma
		} else if !slices.Equal(manual, ma) {
			return nil, fmt.Errorf("%%%s: manual axes %v differ from the region's %v", x.Name, ma, manual)
		}
		for _, s := range sh {
			if len(s.Unreduced) > 0 {
				return nil, eval.Unsupported("unreduced axes in the sharding of %%%s", x.Name)
			}
			if mesh == nil {
				mesh = s.Mesh
			} else if !sameMesh(mesh, s.Mesh) {
				return nil, fmt.Errorf("%%%s: shardings over different meshes in one manual region", x.Name)
			}
		}
		marks = append(marks, marker{x, attr, sh})
	}
	if mesh == nil {
		return nil, fmt.Errorf("%%%s: no sharding names the region's mesh", name)
	}
	devs, err := mesh.Devices()
	if err != nil {
		return nil, err
	}
	spec.Devices = int64(len(devs))
	// Runs: every coordinate of the manual axes (the other axes at 0).
	isManual := map[int]bool{}
	for _, a := range manual {
		i := mesh.AxisIndex(a)
		if i < 0 {
			return nil, fmt.Errorf("manual axis %q is not in the mesh", a)
		}
		isManual[i] = true
	}
	var coords [][]int64
	var walk func(axis int, cur []int64)
	walk = func(axis int, cur []int64) {
		if axis == len(mesh.Axes) {
			coords = append(coords, slices.Clone(cur))
			return
		}
		n := int64(1)
		if isManual[axis] {
			n = mesh.Axes[axis].Size
		}
		for v := range n {
			walk(axis+1, append(cur, v))
		}
	}
	walk(0, nil)
	for _, cs := range coords {
		flat := int64(0)
		for i, v := range cs {
			flat = flat*mesh.Axes[i].Size + v
		}
		spec.Runs = append(spec.Runs, devs[flat])
	}
	place := func(s *sdySharding, rank int) (placement, error) {
		if len(s.Dims) != rank {
			return placement{}, fmt.Errorf("sharding has %d dimensions for an array of rank %d", len(s.Dims), rank)
		}
		p := placement{Blocks: make([]int64, rank)}
		for d, refs := range s.Dims {
			p.Blocks[d] = 1
			for _, r := range refs {
				if isManual[mesh.AxisIndex(r.Name)] {
					p.Blocks[d] *= refSize(mesh, r)
				}
			}
		}
		for _, cs := range coords {
			blk := make([]int64, rank)
			for d, refs := range s.Dims {
				for _, r := range refs {
					ai := mesh.AxisIndex(r.Name)
					if !isManual[ai] {
						continue
					}
					v := cs[ai]
					if r.Size != 0 {
						// "x":(pre)size: pre is the product of the more
						// major sub-axes, so the minor ones stride below.
						v = v / (mesh.Axes[ai].Size / (r.PreSize * r.Size)) % r.Size
					}
					blk[d] = blk[d]*refSize(mesh, r) + v
				}
			}
			p.Of = append(p.Of, blk)
		}
		return p, nil
	}
	for _, mk := range marks {
		isEntry := mk.in.CustomCallTarget == sdyGlobalToLoc
		var arrays []hlo.Shape // the global arrays
		var local []hlo.Shape
		var tuple bool
		if isEntry {
			local, tuple = arrayLeaves(mk.in.Shape)
			for _, op := range mk.in.Operands {
				arrays = append(arrays, op.Shape)
			}
		} else {
			arrays, tuple = arrayLeaves(mk.in.Shape)
			for _, op := range mk.in.Operands {
				local = append(local, op.Shape)
			}
		}
		if len(mk.shards) != len(arrays) || len(local) != len(arrays) {
			return nil, fmt.Errorf("%%%s: %d shardings for %d values", mk.in.Name, len(mk.shards), len(arrays))
		}
		var places []placement
		for i, s := range mk.shards {
			p, err := place(s, len(arrays[i].Dims))
			if err != nil {
				return nil, fmt.Errorf("%%%s value %d: %w", mk.in.Name, i, err)
			}
			if err := checkBlocks(arrays[i], local[i], p); err != nil {
				return nil, fmt.Errorf("%%%s value %d: %w", mk.in.Name, i, err)
			}
			places = append(places, p)
		}
		if isEntry {
			spec.Entries = append(spec.Entries, manualEntry{Local: local, Place: places, Tuple: tuple})
		} else {
			spec.Exits = append(spec.Exits, manualExit{Global: arrays, Place: places, Tuple: tuple})
		}
	}
	return spec, nil
}

func refSize(m *hlo.Mesh, r hlo.AxisRef) int64 {
	if r.Size != 0 {
		return r.Size
	}
	return m.Axes[m.AxisIndex(r.Name)].Size
}

func sameMesh(a, b *hlo.Mesh) bool {
	if len(a.Axes) != len(b.Axes) {
		return false
	}
	for i := range a.Axes {
		if a.Axes[i] != b.Axes[i] {
			return false
		}
	}
	da, _ := a.Devices()
	db, _ := b.Devices()
	return slices.Equal(da, db)
}

// checkBlocks checks that blocks of the local shape cover the global one.
func checkBlocks(global, local hlo.Shape, p placement) error {
	if len(global.Dims) != len(local.Dims) {
		return fmt.Errorf("local shape %v and global shape %v differ in rank", local, global)
	}
	for d := range global.Dims {
		if local.Dims[d]*p.Blocks[d] < global.Dims[d] || local.Dims[d]*(p.Blocks[d]-1) >= global.Dims[d] && global.Dims[d] > 0 {
			return fmt.Errorf("dimension %d: %d blocks of %d do not make %d", d, p.Blocks[d], local.Dims[d], global.Dims[d])
		}
	}
	return nil
}

func (o *outliner) gspmdSpec(spec *manualSpec, entries, exits []*hlo.Instruction) (*manualSpec, error) {
	type marker struct {
		in *hlo.Instruction
		ts *tileSharding
	}
	var marks []marker
	for _, x := range append(slices.Clone(entries), exits...) {
		src := x
		if isEntryMarker(x) {
			if len(x.Operands) != 1 {
				return nil, fmt.Errorf("%%%s takes one operand, got %d", x.Name, len(x.Operands))
			}
			src = x.Operands[0]
		}
		if src.Sharding == "" {
			return nil, fmt.Errorf("%%%s: no sharding on %%%s to split or assemble by", x.Name, src.Name)
		}
		ts, err := parseTileSharding(src.Sharding)
		if err != nil {
			return nil, eval.Unsupported("%%%s: %v", x.Name, err)
		}
		marks = append(marks, marker{x, ts})
	}
	for _, mk := range marks {
		if !mk.ts.Replicated && !mk.ts.Manual {
			n := int64(len(mk.ts.Devices))
			if spec.Devices == 0 {
				spec.Devices = n
			} else if spec.Devices != n {
				return nil, fmt.Errorf("%%%s: sharding over %d devices in a region over %d", mk.in.Name, n, spec.Devices)
			}
		}
	}
	if spec.Devices == 0 {
		spec.Devices = max(o.m.NumPartitions, 1) * max(o.m.ReplicaCount, 1)
	}
	for d := range spec.Devices {
		spec.Runs = append(spec.Runs, d)
	}
	for _, mk := range marks {
		var global, local hlo.Shape
		if isEntryMarker(mk.in) {
			global, local = mk.in.Operands[0].Shape, mk.in.Shape
		} else {
			global, local = mk.in.Shape, mk.in.Operands[0].Shape
		}
		if !global.IsArray() || !local.IsArray() {
			return nil, eval.Unsupported("%%%s: tuple-shaped GSPMD manual markers", mk.in.Name)
		}
		rank := len(global.Dims)
		p := placement{Blocks: make([]int64, rank)}
		for d := range p.Blocks {
			p.Blocks[d] = 1
		}
		ts := mk.ts
		if !ts.Replicated && !ts.Manual {
			if ts.DataRank != rank {
				return nil, fmt.Errorf("%%%s: sharding tiles %d dimensions of a rank-%d array", mk.in.Name, ts.DataRank, rank)
			}
			copy(p.Blocks, ts.Tiles[:rank])
		}
		for _, dev := range spec.Runs {
			blk := make([]int64, rank)
			if !ts.Replicated && !ts.Manual {
				at := slices.Index(ts.Devices, dev)
				if at < 0 {
					return nil, fmt.Errorf("%%%s: device %d is not in the sharding", mk.in.Name, dev)
				}
				coord := make([]int64, len(ts.Tiles))
				for i := len(ts.Tiles) - 1; i >= 0; i-- {
					coord[i] = int64(at) % ts.Tiles[i]
					at /= int(ts.Tiles[i])
				}
				copy(blk, coord[:rank])
			}
			p.Of = append(p.Of, blk)
		}
		if err := checkBlocks(global, local, p); err != nil {
			return nil, fmt.Errorf("%%%s: %w", mk.in.Name, err)
		}
		if isEntryMarker(mk.in) {
			spec.Entries = append(spec.Entries, manualEntry{Local: []hlo.Shape{local}, Place: []placement{p}})
		} else {
			spec.Exits = append(spec.Exits, manualExit{Global: []hlo.Shape{global}, Place: []placement{p}})
		}
	}
	return spec, nil
}

// evalManual runs an outlined manual region on every device of its spec.
func evalManual(ev *eval.Evaluator, in *hlo.Instruction, args []eval.Value) (eval.Value, error) {
	v, ok := manualSpecs.Load(in)
	if !ok || len(in.Called) != 1 {
		return eval.Value{}, fmt.Errorf("manual region %%%s has no spec (it runs only inside golden.Run)", in.Name)
	}
	spec := v.(*manualSpec)
	body := in.Called[0]
	runs := len(spec.Runs)
	argsOf := make([][]eval.Value, runs)
	for r := range runs {
		for _, e := range spec.Entries {
			var leaves []eval.Value
			for i, opIdx := range e.Operands {
				g := args[opIdx].T
				if g == nil {
					return eval.Value{}, fmt.Errorf("manual region operand %d is not an array", opIdx)
				}
				leaves = append(leaves, eval.ArrayValue(sliceBlock(g, e.Local[i].Dims, e.Place[i].Of[r])))
			}
			if e.Tuple {
				argsOf[r] = append(argsOf[r], eval.TupleValue(leaves...))
			} else {
				argsOf[r] = append(argsOf[r], leaves[0])
			}
		}
		nEntryOps := 0
		for _, e := range spec.Entries {
			nEntryOps += len(e.Operands)
		}
		argsOf[r] = append(argsOf[r], args[nEntryOps:]...)
	}
	rv := NewRendezvous(int(spec.Devices))
	isRunning := map[int64]bool{}
	for _, d := range spec.Runs {
		isRunning[d] = true
	}
	var running []int64 // ascending
	for d := range spec.Devices {
		if !isRunning[d] {
			rv.Finish(int(d), nil)
		} else {
			running = append(running, d)
		}
	}
	outs := make([]eval.Value, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for r, dev := range spec.Runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[r] = &InternalError{Value: p}
				}
			}()
			opts := ev.Options
			opts.ReplicaID, opts.PartitionID = 0, dev
			opts.ReplicaCount, opts.NumPartitions = 1, spec.Devices
			opts.Trace = nil
			if int64(len(spec.Runs)) != spec.Devices {
				opts.Running = running
			}
			opts.Exchange = func(in *hlo.Instruction, group []int64, v eval.Value) ([]eval.Value, error) {
				return rv.ExchangeGroup(in, int(dev), group, v)
			}
			devEv := eval.New(ev.Module, opts)
			devEv.Ctx = ev.Ctx
			outs[r], errs[r] = devEv.Call(body, argsOf[r])
			rv.Finish(int(opts.PartitionID), errs[r])
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return eval.Value{}, fmt.Errorf("manual region on device %d: %w", spec.Runs[r], err)
		}
	}
	var elems []eval.Value
	for _, x := range spec.Exits {
		var leaves []eval.Value
		for i, res := range x.Results {
			g := tensor.New(x.Global[i].Elem, x.Global[i].Dims)
			written := map[string]bool{}
			for r := range runs {
				blk := x.Place[i].Of[r]
				key := fmt.Sprint(blk)
				if written[key] {
					continue
				}
				written[key] = true
				t := outs[r].Tuple[res].T
				if t == nil {
					return eval.Value{}, fmt.Errorf("manual region result %d is not an array", res)
				}
				placeBlock(g, t, blk)
			}
			leaves = append(leaves, eval.ArrayValue(g))
		}
		if x.Tuple {
			elems = append(elems, eval.TupleValue(leaves...))
		} else {
			elems = append(elems, leaves[0])
		}
	}
	return eval.TupleValue(elems...), nil
}

// sliceBlock returns block blk (of shape local) of the global array g,
// zero-padded where it runs past g's end.
func sliceBlock(g *tensor.Tensor, local []int64, blk []int64) *tensor.Tensor {
	out := tensor.New(g.Type, local)
	copyBlock(out, g, blk, local, false)
	return out
}

// placeBlock writes the local array t as block blk of g, cut at g's end.
func placeBlock(g, t *tensor.Tensor, blk []int64) {
	copyBlock(t, g, blk, t.Dims, true)
}

// copyBlock copies between local (of shape dims) and the block blk of
// global; toGlobal chooses the direction.
func copyBlock(local, global *tensor.Tensor, blk, dims []int64, toGlobal bool) {
	rank := len(dims)
	es := int64(global.Type.Size())
	if rank == 0 {
		if toGlobal {
			copy(global.Data, local.Data)
		} else {
			copy(local.Data, global.Data)
		}
		return
	}
	gs, ls := tensor.Strides(global.Dims), tensor.Strides(dims)
	start := make([]int64, rank)
	count := make([]int64, rank)
	for d := range rank {
		start[d] = blk[d] * dims[d]
		count[d] = max(0, min(dims[d], global.Dims[d]-start[d]))
		if count[d] == 0 {
			return
		}
	}
	idx := make([]int64, rank-1)
	for {
		goff, loff := int64(0), int64(0)
		for d := 0; d < rank-1; d++ {
			goff += (start[d] + idx[d]) * gs[d]
			loff += idx[d] * ls[d]
		}
		goff += start[rank-1] * gs[rank-1]
		n := count[rank-1] * es
		g := global.Data[goff*es : goff*es+n]
		l := local.Data[loff*es : loff*es+n]
		if toGlobal {
			copy(g, l)
		} else {
			copy(l, g)
		}
		d := rank - 2
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < count[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// hoistSdyCallAttrs moves the shardings that older Shardy exports put on the
// call to xla.sdy.manual_computation_body (xla.sdy.in_shardings,
// out_shardings, manual_axes) onto the region's markers, where newer
// exports put them and where the outliner reads them (XLA's
// shard_map_import.cc accepts both). It runs before calls are inlined.
func hoistSdyCallAttrs(m *hlo.Module) {
	for _, c := range m.Computations {
		users := map[*hlo.Instruction][]*hlo.Instruction{}
		for _, in := range c.Instructions {
			for _, op := range in.Operands {
				users[op] = append(users[op], in)
			}
		}
		for _, call := range c.Instructions {
			if call.Opcode != "call" || len(call.Called) != 1 || !strings.Contains(call.Called[0].Name, "manual_computation_body") {
				continue
			}
			fa := call.FrontendAttrs
			if fa["xla.sdy.manual_axes"] == "" {
				continue
			}
			set := func(x *hlo.Instruction, key string) {
				if x.FrontendAttrs[key] != "" {
					return
				}
				attrs := map[string]string{}
				for k, v := range x.FrontendAttrs {
					attrs[k] = v
				}
				attrs[key] = fa[key]
				attrs["xla.sdy.manual_axes"] = fa["xla.sdy.manual_axes"]
				x.FrontendAttrs = attrs
			}
			for _, op := range call.Operands {
				if op.Opcode == "get-tuple-element" {
					op = op.Operands[0]
				}
				if op.CustomCallTarget == sdyGlobalToLoc && op.Opcode == "custom-call" {
					set(op, "xla.sdy.in_shardings")
				}
			}
			var outs []*hlo.Instruction
			for _, u := range users[call] {
				if u.Opcode == "get-tuple-element" {
					outs = append(outs, users[u]...)
				} else {
					outs = append(outs, u)
				}
			}
			for _, u := range outs {
				if u.Opcode == "custom-call" && u.CustomCallTarget == sdyLocToGlobal {
					set(u, "xla.sdy.out_shardings")
				}
			}
		}
	}
}
