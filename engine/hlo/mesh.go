package hlo

// The mesh-axes form of replica_groups that newer XLA prints
// (MeshAxesReplicaGroupList in xla/hlo/ir/replica_group.h):
//
//	replica_groups=mesh['x'=2,'y'=4] {'y'}
//	replica_groups=mesh[x=4,y=2], device_ids=([2,4]T(1,0)) {x:(1)2}
//	replica_groups=maximal_mesh[device_id=3] {}
//
// A group is the set of devices that differ only in the named axes (or
// sub-axes); the groups partition the mesh's devices.

import (
	"fmt"
	"slices"
	"strings"
)

// MeshAxesReplicaGroups is replica_groups=mesh[...] {axes}.
type MeshAxesReplicaGroups struct {
	Mesh Mesh
	Axes []AxisRef // the axes whose devices form one group, in group order
}

// Mesh is a named device mesh: axis names and sizes, and the device ids laid
// out over them (row-major) when they are not 0, 1, 2, ...
type Mesh struct {
	Axes []MeshAxis
	// DeviceIDs is the explicit device order; nil means iota.
	DeviceIDs *DeviceIDs
	// Maximal is maximal_mesh[device_id=MaximalDevice] (no axes).
	Maximal       bool
	MaximalDevice int64
	// BareNames records the spelling mesh[x=4] (newer printers) rather
	// than mesh['x'=4] (XLA of JAX 0.10), so the printer repeats it.
	BareNames bool
}

// MeshAxis is one name=size of a mesh.
type MeshAxis struct {
	Name string
	Size int64
}

// AxisRef names a mesh axis, or with Size > 0 its sub-axis "name":(PreSize)Size:
// the Size consecutive coordinates of stride PreSize within the axis.
type AxisRef struct {
	Name    string
	PreSize int64 // 0 for the whole axis
	Size    int64 // 0 for the whole axis
}

// DeviceIDs is the device_ids=(...) of a mesh: either an iota form
// [reshape]T(perm) (optionally written [dims]<=[reshape]T(perm)) or an
// explicit list.
type DeviceIDs struct {
	Dims        []int64 // the [dims]<= prefix; nil when not written
	ReshapeDims []int64 // iota form
	Transpose   []int64 // iota form; nil when no T(...)
	List        []int64 // explicit form; nil for iota
}

// NumDevices is the product of the axis sizes (1 for a maximal mesh).
func (m *Mesh) NumDevices() int64 {
	n := int64(1)
	for _, a := range m.Axes {
		n *= a.Size
	}
	return n
}

// AxisIndex returns the position of the named axis, or -1.
func (m *Mesh) AxisIndex(name string) int {
	for i, a := range m.Axes {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// Devices returns the mesh's device ids in row-major order over its axes.
func (m *Mesh) Devices() ([]int64, error) {
	if m.Maximal {
		return []int64{m.MaximalDevice}, nil
	}
	n := m.NumDevices()
	d := m.DeviceIDs
	if d == nil {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out, nil
	}
	if d.List != nil {
		if int64(len(d.List)) != n {
			return nil, fmt.Errorf("mesh has %d devices but device_ids lists %d", n, len(d.List))
		}
		seen := map[int64]bool{}
		for _, v := range d.List {
			if v < 0 || v >= n || seen[v] {
				return nil, fmt.Errorf("mesh device_ids %v are not a permutation of 0..%d", d.List, n-1)
			}
			seen[v] = true
		}
		return slices.Clone(d.List), nil
	}
	if tensorNumElements(d.ReshapeDims) != n {
		return nil, fmt.Errorf("mesh has %d devices but device_ids reshape dims %v hold %d", n, d.ReshapeDims, tensorNumElements(d.ReshapeDims))
	}
	if d.Dims != nil && tensorNumElements(d.Dims) != n {
		return nil, fmt.Errorf("mesh has %d devices but device_ids dims %v hold %d", n, d.Dims, tensorNumElements(d.Dims))
	}
	perm := d.Transpose
	if perm == nil {
		perm = identityPerm(len(d.ReshapeDims))
	}
	if !isPermutation(perm, len(d.ReshapeDims)) {
		return nil, fmt.Errorf("device_ids transpose %v is not a permutation of %d dims", perm, len(d.ReshapeDims))
	}
	return TransposeIota(d.ReshapeDims, perm), nil
}

func identityPerm(n int) []int64 {
	p := make([]int64, n)
	for i := range p {
		p[i] = int64(i)
	}
	return p
}

// TransposeIota returns iota(prod(dims)) reshaped to dims and transposed by
// perm, flattened row-major.
func TransposeIota(dims, perm []int64) []int64 {
	n := tensorNumElements(dims)
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = int64(i)
	}
	return transposeFlat(vals, dims, perm)
}

// transposeFlat transposes the row-major array vals of shape dims by perm.
func transposeFlat(vals, dims, perm []int64) []int64 {
	rank := len(dims)
	strides := make([]int64, rank)
	s := int64(1)
	for i := rank - 1; i >= 0; i-- {
		strides[i] = s
		s *= dims[i]
	}
	tdims := make([]int64, rank)
	tstr := make([]int64, rank)
	for i, p := range perm {
		tdims[i] = dims[p]
		tstr[i] = strides[p]
	}
	out := make([]int64, 0, len(vals))
	idx := make([]int64, rank)
	for range len(vals) {
		off := int64(0)
		for i, x := range idx {
			off += x * tstr[i]
		}
		out = append(out, vals[off])
		for i := rank - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < tdims[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// Validate checks the mesh and the axes against it, as XLA's
// ValidateSpanOfAxes does: known axes, sub-axes that divide their axis, and
// no overlaps.
func (g *MeshAxesReplicaGroups) Validate() error {
	m := &g.Mesh
	names := map[string]bool{}
	for _, a := range m.Axes {
		if a.Size <= 0 {
			return fmt.Errorf("mesh axis %q has size %d", a.Name, a.Size)
		}
		if names[a.Name] {
			return fmt.Errorf("mesh axis %q appears twice", a.Name)
		}
		names[a.Name] = true
	}
	if _, err := m.Devices(); err != nil {
		return err
	}
	for i, r := range g.Axes {
		ai := m.AxisIndex(r.Name)
		if ai < 0 {
			return fmt.Errorf("axis %q is not in the mesh", r.Name)
		}
		full := m.Axes[ai].Size
		if r.Size != 0 {
			if r.PreSize <= 0 || r.Size <= 1 || full%(r.PreSize*r.Size) != 0 || r.Size >= full {
				return fmt.Errorf("sub-axis %s does not divide axis %q of size %d", r.String(), r.Name, full)
			}
		}
		for _, o := range g.Axes[:i] {
			if o.Name == r.Name && o.overlaps(r, full) {
				return fmt.Errorf("axes %s and %s overlap", o.String(), r.String())
			}
		}
	}
	return nil
}

func (r AxisRef) span(full int64) (lo, hi int64) {
	if r.Size == 0 {
		return 1, full
	}
	return r.PreSize, r.PreSize * r.Size
}

func (r AxisRef) overlaps(o AxisRef, full int64) bool {
	a0, a1 := r.span(full)
	b0, b1 := o.span(full)
	return a1 > b0 && b1 > a0
}

// String spells the axis reference as XLA prints it inside a mesh-axes list
// (without quotes).
func (r AxisRef) String() string {
	if r.Size == 0 {
		return r.Name
	}
	return fmt.Sprintf("%s:(%d)%d", r.Name, r.PreSize, r.Size)
}

// Expand returns the replica groups as lists of device ids: the mesh's device
// array with every axis split into its referenced sub-axes, the referenced
// dimensions moved last (in the order written), read row-major in groups.
func (g *MeshAxesReplicaGroups) Expand() ([][]int64, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	m := &g.Mesh
	devs, _ := m.Devices()
	var dims []int64
	grouped := make([]int64, len(g.Axes))
	for _, ax := range m.Axes {
		var refs []int // indices into g.Axes on this mesh axis
		for i, r := range g.Axes {
			if r.Name == ax.Name {
				refs = append(refs, i)
			}
		}
		if len(refs) == 0 {
			dims = append(dims, ax.Size)
			continue
		}
		sorted := slices.Clone(refs)
		slices.SortFunc(sorted, func(a, b int) int {
			pa, _ := g.Axes[a].span(ax.Size)
			pb, _ := g.Axes[b].span(ax.Size)
			return int(pa - pb)
		})
		// Split the axis by pre-size: in Shardy's notation the sub-axis of
		// pre-size 1 is the most major, so ascending pre-sizes run from
		// major to minor, with filler dimensions for the gaps.
		prefix := int64(1)
		for _, ri := range sorted {
			lo, hi := g.Axes[ri].span(ax.Size)
			if lo != prefix {
				dims = append(dims, lo/prefix)
			}
			grouped[ri] = int64(len(dims))
			dims = append(dims, hi/lo)
			prefix = hi
		}
		if prefix != ax.Size {
			dims = append(dims, ax.Size/prefix)
		}
	}
	var perm []int64
	for d := range dims {
		if !slices.Contains(grouped, int64(d)) {
			perm = append(perm, int64(d))
		}
	}
	perm = append(perm, grouped...)
	flat := transposeFlat(devs, dims, perm)
	size := int64(1)
	for _, d := range grouped {
		size *= dims[d]
	}
	groups := make([][]int64, 0, int64(len(flat))/size)
	for i := int64(0); i < int64(len(flat)); i += size {
		groups = append(groups, flat[i:i+size:i+size])
	}
	return groups, nil
}

// meshString prints a mesh as XLA does: mesh['x'=2,'y'=4] (or bare names),
// with ", device_ids=(...)" for a non-iota order.
func meshString(m *Mesh) string {
	if m.Maximal {
		return "maximal_mesh[device_id=" + itoa(m.MaximalDevice) + "]"
	}
	var b strings.Builder
	b.WriteString("mesh[")
	for i, a := range m.Axes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(axisName(a.Name, m.BareNames))
		b.WriteString("=" + itoa(a.Size))
	}
	b.WriteByte(']')
	if d := m.DeviceIDs; d != nil {
		b.WriteString(", device_ids=(")
		switch {
		case d.List != nil:
			writeInts(&b, d.List, ",")
		default:
			if d.Dims != nil {
				b.WriteString("[")
				writeInts(&b, d.Dims, ",")
				b.WriteString("]<=")
			}
			b.WriteString("[")
			writeInts(&b, d.ReshapeDims, ",")
			b.WriteString("]")
			if d.Transpose != nil {
				b.WriteString("T(")
				writeInts(&b, d.Transpose, ",")
				b.WriteString(")")
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

func axisName(name string, bare bool) string {
	if bare && isPlainWord(name) && !strings.ContainsAny(name, ":") {
		return name
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(name, `\`, `\\`), "'", `\'`) + "'"
}

func meshAxesString(g *MeshAxesReplicaGroups) string {
	parts := make([]string, len(g.Axes))
	for i, r := range g.Axes {
		parts[i] = axisName(r.Name, g.Mesh.BareNames)
		if r.Size != 0 {
			parts[i] += fmt.Sprintf(":(%d)%d", r.PreSize, r.Size)
		}
	}
	return meshString(&g.Mesh) + " {" + strings.Join(parts, ",") + "}"
}

// ---- parsing ----

// meshAxesGroups parses mesh[...] {axes} or maximal_mesh[device_id=N] {axes}.
func (p *parser) meshAxesGroups() *MeshAxesReplicaGroups {
	pos := p.pos
	g := &MeshAxesReplicaGroups{}
	g.Mesh = p.mesh()
	p.expect(tLBrace, "'{' opening the mesh axes of the replica groups")
	g.Axes = []AxisRef{}
	for p.tok != tRBrace {
		g.Axes = append(g.Axes, p.axisRef())
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRBrace, "'}'")
	if err := g.Validate(); err != nil {
		p.errorf(pos, "invalid mesh-axes replica groups: %v", err)
	}
	return g
}

func (p *parser) mesh() Mesh {
	var m Mesh
	if p.isWord("maximal_mesh") {
		p.next()
		p.expect(tLBrack, "'['")
		if !p.isWord("device_id") {
			p.errorf(p.pos, "expected device_id, found %s", p.describe())
		}
		p.next()
		p.expect(tEqual, "'='")
		m.Maximal = true
		m.MaximalDevice = p.int64()
		p.expect(tRBrack, "']'")
		return m
	}
	if !p.isWord("mesh") {
		p.errorf(p.pos, "expected mesh or maximal_mesh, found %s", p.describe())
	}
	p.next()
	p.expect(tLBrack, "'['")
	m.Axes = []MeshAxis{}
	for p.tok != tRBrack {
		var a MeshAxis
		var bare bool
		a.Name, bare = p.axisNameTok()
		if len(m.Axes) == 0 {
			m.BareNames = bare
		}
		p.expect(tEqual, "'='")
		spos := p.pos
		a.Size = p.int64()
		if a.Size <= 0 {
			p.errorf(spos, "mesh axis size must be positive, found %d", a.Size)
		}
		m.Axes = append(m.Axes, a)
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRBrack, "']'")
	if p.tok == tComma && p.peekIsWordEq("device_ids") {
		p.next()
		p.next()
		p.expect(tEqual, "'='")
		p.expect(tLParen, "'('")
		m.DeviceIDs = p.deviceIDs()
		p.expect(tRParen, "')'")
	}
	return m
}

// peekIsWordEq reports whether the next two tokens are the word w and '='.
func (p *parser) peekIsWordEq(w string) bool {
	s := p.sc
	s.err = func(int, string) {}
	t1, _, l1 := s.scan()
	t2, _, _ := s.scan()
	return t1 == tWord && l1 == w && t2 == tEqual
}

func (p *parser) bracketInts() []int64 {
	p.expect(tLBrack, "'['")
	out := []int64{}
	for p.tok != tRBrack {
		out = append(out, p.int64())
		if !p.got(tComma) {
			break
		}
	}
	p.expect(tRBrack, "']'")
	return out
}

func (p *parser) deviceIDs() *DeviceIDs {
	d := &DeviceIDs{}
	if p.tok != tLBrack {
		d.List = []int64{}
		for p.tok != tRParen {
			d.List = append(d.List, p.int64())
			if !p.got(tComma) {
				break
			}
		}
		return d
	}
	first := p.bracketInts()
	switch {
	case p.got(tLeq):
		d.Dims = first
		d.ReshapeDims = p.bracketInts()
	case p.tok == tWord && p.lit != "T":
		// [dims]0,1,2,...: an explicit list after its dims.
		d.Dims = first
		d.List = []int64{}
		for p.tok != tRParen {
			d.List = append(d.List, p.int64())
			if !p.got(tComma) {
				break
			}
		}
		return d
	default:
		d.ReshapeDims = first
	}
	if p.isWord("T") {
		p.next()
		p.expect(tLParen, "'('")
		d.Transpose = []int64{}
		for p.tok != tRParen {
			d.Transpose = append(d.Transpose, p.int64())
			if !p.got(tComma) {
				break
			}
		}
		p.expect(tRParen, "')'")
	}
	return d
}

// axisNameTok reads an axis name: 'x', "x" or x; bare reports the last.
func (p *parser) axisNameTok() (string, bool) {
	switch p.tok {
	case tString:
		return p.str("axis name"), false
	case tWord:
		return p.word("axis name"), true
	}
	p.errorf(p.pos, "expected axis name, found %s", p.describe())
	return "", false
}

func (p *parser) axisRef() AxisRef {
	var r AxisRef
	r.Name, _ = p.axisNameTok()
	if p.got(tColon) {
		p.expect(tLParen, "'('")
		r.PreSize = p.int64()
		p.expect(tRParen, "')'")
		r.Size = p.int64()
	}
	return r
}
