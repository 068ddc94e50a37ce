package golden

// Shardings as the SPMD driver (-S) needs them: which block of a global
// array each device holds. Two spellings reach it:
//
//   - GSPMD (HloSharding::ToString): {replicated}, {manual},
//     {maximal device=N}, {devices=[2,4]<=[8]}, {devices=[2,1,4]<=[2,4]T(1,0)
//     last_tile_dim_replicate}, {devices=[2,2]0,2,1,3}, last_tile_dims={...}.
//   - Shardy, in the xla.sdy.* frontend attributes JAX's export writes:
//     #sdy.mesh<["x"=2, "y"=4]> (optionally device_ids=[...]),
//     #sdy.sharding<@mesh, [{"x"}, {"y":(1)2, ?}p0], replicated={"z"}>,
//     #sdy.sharding_per_value<[<@mesh, [...]>, ...]>,
//     #sdy<manual_axes{"x", "y"}>.

import (
	"fmt"
	"strconv"
	"strings"

	"goldtrace/engine/hlo"
)

// sdyToken is one token of Shardy attribute text.
type sdyToken struct {
	kind byte // 'w' word, 's' string, or the punctuation character
	text string
}

func sdyTokens(src string) ([]sdyToken, error) {
	var out []sdyToken
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			var b strings.Builder
			for j < len(src) && src[j] != c {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				b.WriteByte(src[j])
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated string in %q", src)
			}
			out = append(out, sdyToken{'s', b.String()})
			i = j + 1
		case strings.IndexByte("<>[]{}(),=:?@#", c) >= 0:
			out = append(out, sdyToken{c, string(c)})
			i++
		case c == '_' || c == '.' || c == '$' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || src[j] == '$' || src[j] == '-' ||
				src[j] >= '0' && src[j] <= '9' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z') {
				j++
			}
			out = append(out, sdyToken{'w', src[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q in %q", c, src)
		}
	}
	return out, nil
}

type sdyParser struct {
	toks []sdyToken
	i    int
	src  string
}

func newSdyParser(src string) (*sdyParser, error) {
	toks, err := sdyTokens(src)
	if err != nil {
		return nil, err
	}
	return &sdyParser{toks: toks, src: src}, nil
}

func (p *sdyParser) peek() sdyToken {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return sdyToken{0, "end"}
}

func (p *sdyParser) is(kind byte, text string) bool {
	t := p.peek()
	return t.kind == kind && (text == "" || t.text == text)
}

func (p *sdyParser) got(kind byte) bool {
	if p.peek().kind == kind {
		p.i++
		return true
	}
	return false
}

func (p *sdyParser) expect(kind byte, text string) (string, error) {
	t := p.peek()
	if t.kind != kind || text != "" && t.text != text {
		want := text
		if want == "" {
			want = map[byte]string{'w': "a word", 's': "a string"}[kind]
			if want == "" {
				want = string(kind)
			}
		}
		return "", fmt.Errorf("expected %s, found %q in %q", want, t.text, p.src)
	}
	p.i++
	return t.text, nil
}

func (p *sdyParser) int() (int64, error) {
	w, err := p.expect('w', "")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected an integer, found %q in %q", w, p.src)
	}
	return v, nil
}

// prefix consumes "#sdy.<name><" (or "#sdy<name" when name is after '<').
func (p *sdyParser) prefix(name string) error {
	if _, err := p.expect('#', ""); err != nil {
		return err
	}
	w, err := p.expect('w', "")
	if err != nil {
		return err
	}
	if w != "sdy."+name {
		return fmt.Errorf("expected #sdy.%s, found #%s in %q", name, w, p.src)
	}
	_, err = p.expect('<', "")
	return err
}

// mesh parses ["x"=2, "y"=4] (, device_ids=[...])? after #sdy.mesh< or mesh<.
func (p *sdyParser) meshBody() (*hlo.Mesh, error) {
	m := &hlo.Mesh{Axes: []hlo.MeshAxis{}}
	if _, err := p.expect('[', ""); err != nil {
		return nil, err
	}
	for !p.got(']') {
		name, err := p.expect('s', "")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		size, err := p.int()
		if err != nil {
			return nil, err
		}
		m.Axes = append(m.Axes, hlo.MeshAxis{Name: name, Size: size})
		p.got(',')
	}
	if p.got(',') {
		if _, err := p.expect('w', "device_ids"); err != nil {
			return nil, err
		}
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		if _, err := p.expect('[', ""); err != nil {
			return nil, err
		}
		ids := []int64{}
		for !p.got(']') {
			v, err := p.int()
			if err != nil {
				return nil, err
			}
			ids = append(ids, v)
			p.got(',')
		}
		if len(m.Axes) == 0 {
			if len(ids) != 1 {
				return nil, fmt.Errorf("a mesh without axes needs one device id, got %v", ids)
			}
			m.Maximal, m.MaximalDevice = true, ids[0]
		} else {
			m.DeviceIDs = &hlo.DeviceIDs{List: ids}
		}
	}
	if _, err := p.expect('>', ""); err != nil {
		return nil, err
	}
	if _, err := m.Devices(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseSdyMeshes parses the module's xla.sdy.meshes attribute:
// {name = #sdy.mesh<...>, ...}.
func parseSdyMeshes(src string) (map[string]*hlo.Mesh, error) {
	p, err := newSdyParser(src)
	if err != nil {
		return nil, err
	}
	out := map[string]*hlo.Mesh{}
	if _, err := p.expect('{', ""); err != nil {
		return nil, err
	}
	for !p.got('}') {
		name, err := p.expect('w', "")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		if err := p.prefix("mesh"); err != nil {
			return nil, err
		}
		m, err := p.meshBody()
		if err != nil {
			return nil, err
		}
		out[name] = m
		p.got(',')
	}
	return out, nil
}

// sdySharding is one tensor's Shardy sharding.
type sdySharding struct {
	Mesh       *hlo.Mesh
	Dims       [][]hlo.AxisRef // per dimension, major first
	Replicated []hlo.AxisRef
	Unreduced  []hlo.AxisRef
}

func (p *sdyParser) axisRefs(closer byte) ([]hlo.AxisRef, error) {
	var out []hlo.AxisRef
	for !p.got(closer) {
		if p.got('?') {
			p.got(',')
			continue
		}
		name, err := p.expect('s', "")
		if err != nil {
			return nil, err
		}
		r := hlo.AxisRef{Name: name}
		if p.got(':') {
			if _, err := p.expect('(', ""); err != nil {
				return nil, err
			}
			if r.PreSize, err = p.int(); err != nil {
				return nil, err
			}
			if _, err := p.expect(')', ""); err != nil {
				return nil, err
			}
			if r.Size, err = p.int(); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
		p.got(',')
	}
	return out, nil
}

// shardingBody parses @mesh, [{...}, ...] (, replicated={...})* after '<'.
func (p *sdyParser) shardingBody(meshes map[string]*hlo.Mesh) (*sdySharding, error) {
	s := &sdySharding{}
	switch {
	case p.got('@'):
		name, err := p.expect('w', "")
		if err != nil {
			return nil, err
		}
		if s.Mesh = meshes[name]; s.Mesh == nil {
			return nil, fmt.Errorf("mesh @%s is not in the module's xla.sdy.meshes", name)
		}
	case p.is('w', "mesh"):
		p.i++
		if _, err := p.expect('<', ""); err != nil {
			return nil, err
		}
		m, err := p.meshBody()
		if err != nil {
			return nil, err
		}
		s.Mesh = m
	default:
		return nil, fmt.Errorf("expected a mesh reference, found %q in %q", p.peek().text, p.src)
	}
	if _, err := p.expect(',', ""); err != nil {
		return nil, err
	}
	if _, err := p.expect('[', ""); err != nil {
		return nil, err
	}
	for !p.got(']') {
		if _, err := p.expect('{', ""); err != nil {
			return nil, err
		}
		refs, err := p.axisRefs('}')
		if err != nil {
			return nil, err
		}
		s.Dims = append(s.Dims, refs)
		if t := p.peek(); t.kind == 'w' && strings.HasPrefix(t.text, "p") {
			p.i++ // priority
		}
		p.got(',')
	}
	for p.got(',') {
		kw, err := p.expect('w', "")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		if _, err := p.expect('{', ""); err != nil {
			return nil, err
		}
		refs, err := p.axisRefs('}')
		if err != nil {
			return nil, err
		}
		switch kw {
		case "replicated":
			s.Replicated = refs
		case "unreduced":
			s.Unreduced = refs
		default:
			return nil, fmt.Errorf("unknown sharding field %q in %q", kw, p.src)
		}
	}
	if _, err := p.expect('>', ""); err != nil {
		return nil, err
	}
	for _, d := range s.Dims {
		for _, r := range d {
			if s.Mesh.AxisIndex(r.Name) < 0 {
				return nil, fmt.Errorf("axis %q is not in the mesh", r.Name)
			}
		}
	}
	return s, nil
}

// parseSdyShardings parses #sdy.sharding_per_value<[<...>, ...]> or a
// single #sdy.sharding<...>.
func parseSdyShardings(src string, meshes map[string]*hlo.Mesh) ([]*sdySharding, error) {
	p, err := newSdyParser(src)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect('#', ""); err != nil {
		return nil, err
	}
	w, err := p.expect('w', "")
	if err != nil {
		return nil, err
	}
	if _, err := p.expect('<', ""); err != nil {
		return nil, err
	}
	switch w {
	case "sdy.sharding":
		s, err := p.shardingBody(meshes)
		if err != nil {
			return nil, err
		}
		return []*sdySharding{s}, nil
	case "sdy.sharding_per_value":
		if _, err := p.expect('[', ""); err != nil {
			return nil, err
		}
		var out []*sdySharding
		for !p.got(']') {
			if _, err := p.expect('<', ""); err != nil {
				return nil, err
			}
			s, err := p.shardingBody(meshes)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			p.got(',')
		}
		_, err := p.expect('>', "")
		return out, err
	}
	return nil, fmt.Errorf("expected #sdy.sharding or #sdy.sharding_per_value, found #%s", w)
}

// parseSdyManualAxes parses #sdy<manual_axes{"x", "y"}>.
func parseSdyManualAxes(src string) ([]string, error) {
	p, err := newSdyParser(src)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect('#', ""); err != nil {
		return nil, err
	}
	if _, err := p.expect('w', "sdy"); err != nil {
		return nil, err
	}
	if _, err := p.expect('<', ""); err != nil {
		return nil, err
	}
	if _, err := p.expect('w', "manual_axes"); err != nil {
		return nil, err
	}
	if _, err := p.expect('{', ""); err != nil {
		return nil, err
	}
	var out []string
	for !p.got('}') {
		s, err := p.expect('s', "")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		p.got(',')
	}
	_, err = p.expect('>', "")
	return out, err
}

// tileSharding is a GSPMD sharding: the device at each tile coordinate.
type tileSharding struct {
	Replicated bool    // {replicated} (or maximal: every device sees all)
	Manual     bool    // {manual}
	Tiles      []int64 // tiles per array dimension (then replicated dims)
	DataRank   int     // how many of Tiles are array dimensions
	Devices    []int64 // row-major over Tiles
}

// parseTileSharding parses the text of an HLO sharding={...} attribute for
// one array (tuple shardings are not supported here).
func parseTileSharding(text string) (*tileSharding, error) {
	s := strings.TrimSpace(text)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("sharding %q is not braced", text)
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	if i := strings.Index(body, "metadata="); i >= 0 {
		body = strings.TrimRight(strings.TrimSpace(body[:i]), ", ")
	}
	switch {
	case strings.HasPrefix(body, "mesh[") || strings.HasPrefix(body, "maximal_mesh["):
		ts, err := parseNamedSharding(body)
		if err != nil {
			return nil, fmt.Errorf("sharding %s: %v", text, err)
		}
		return ts, nil
	case body == "replicated", strings.HasPrefix(body, "maximal"):
		return &tileSharding{Replicated: true}, nil
	case body == "manual":
		return &tileSharding{Manual: true}, nil
	case strings.HasPrefix(body, "{"):
		return nil, fmt.Errorf("tuple sharding %s", text)
	case !strings.HasPrefix(body, "devices=["):
		return nil, fmt.Errorf("sharding %s", text)
	}
	rest := body[len("devices=["):]
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return nil, fmt.Errorf("sharding %s: unclosed tile dimensions", text)
	}
	ts := &tileSharding{}
	var err error
	if ts.Tiles, err = intList(rest[:end]); err != nil {
		return nil, fmt.Errorf("sharding %s: %v", text, err)
	}
	rest = strings.TrimSpace(rest[end+1:])
	n := int64(1)
	for _, t := range ts.Tiles {
		n *= t
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, fmt.Errorf("sharding %s: no devices", text)
	}
	devs := fields[0]
	if strings.HasPrefix(devs, "<=[") {
		close := strings.IndexByte(devs, ']')
		reshape, err := intList(devs[3:close])
		if err != nil {
			return nil, fmt.Errorf("sharding %s: %v", text, err)
		}
		var perm []int64
		if t := devs[close+1:]; strings.HasPrefix(t, "T(") && strings.HasSuffix(t, ")") {
			if perm, err = intList(t[2 : len(t)-1]); err != nil {
				return nil, fmt.Errorf("sharding %s: %v", text, err)
			}
		} else if t != "" {
			return nil, fmt.Errorf("sharding %s: unexpected %q", text, t)
		} else {
			perm = make([]int64, len(reshape))
			for i := range perm {
				perm[i] = int64(i)
			}
		}
		ts.Devices = hlo.TransposeIota(reshape, perm)
	} else if ts.Devices, err = intList(devs); err != nil {
		return nil, fmt.Errorf("sharding %s: %v", text, err)
	}
	if int64(len(ts.Devices)) != n {
		return nil, fmt.Errorf("sharding %s: %d devices for %d tiles", text, len(ts.Devices), n)
	}
	ts.DataRank = len(ts.Tiles)
	for _, f := range fields[1:] {
		switch {
		case f == "last_tile_dim_replicate":
			ts.DataRank--
		case strings.HasPrefix(f, "last_tile_dims={"):
			kinds := strings.Split(strings.TrimSuffix(strings.TrimPrefix(f, "last_tile_dims={"), "}"), ",")
			for _, k := range kinds {
				if k != "replicated" {
					return nil, fmt.Errorf("sharding %s: last tile dimension %q (partially manual shardings are not supported)", text, k)
				}
			}
			ts.DataRank -= len(kinds)
		default:
			return nil, fmt.Errorf("sharding %s: unknown field %q", text, f)
		}
	}
	if ts.DataRank < 0 {
		return nil, fmt.Errorf("sharding %s: more replicated than tile dimensions", text)
	}
	return ts, nil
}

func intList(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseNamedSharding parses the body of newer XLA's named sharding
// (NamedSharding::ToString): mesh[...] (, device_ids=(...))? followed by
// ", replicated", ", manual", or ", [{x}, {}]" with optional
// replicated={...}; and maximal_mesh[device_id=N]. It returns the tile
// assignment it amounts to.
func parseNamedSharding(body string) (*tileSharding, error) {
	p, err := newSdyParser(body)
	if err != nil {
		return nil, err
	}
	name, err := p.expect('w', "")
	if err != nil {
		return nil, err
	}
	if _, err := p.expect('[', ""); err != nil {
		return nil, err
	}
	if name == "maximal_mesh" {
		return &tileSharding{Replicated: true}, nil
	}
	if name != "mesh" {
		return nil, fmt.Errorf("expected mesh[...], found %s", name)
	}
	m := &hlo.Mesh{Axes: []hlo.MeshAxis{}}
	for !p.got(']') {
		t := p.peek()
		if t.kind != 's' && t.kind != 'w' {
			return nil, fmt.Errorf("expected an axis name, found %q", t.text)
		}
		p.i++
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		size, err := p.int()
		if err != nil {
			return nil, err
		}
		m.Axes = append(m.Axes, hlo.MeshAxis{Name: t.text, Size: size})
		p.got(',')
	}
	if p.got(',') && p.is('w', "device_ids") {
		p.i++
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		if _, err := p.expect('(', ""); err != nil {
			return nil, err
		}
		d := &hlo.DeviceIDs{}
		ints := func(closer byte) ([]int64, error) {
			out := []int64{}
			for !p.got(closer) {
				v, err := p.int()
				if err != nil {
					return nil, err
				}
				out = append(out, v)
				p.got(',')
			}
			return out, nil
		}
		if p.got('[') {
			first, err := ints(']')
			if err != nil {
				return nil, err
			}
			d.ReshapeDims = first
			if p.got('<') {
				if _, err := p.expect('=', ""); err != nil {
					return nil, err
				}
				if _, err := p.expect('[', ""); err != nil {
					return nil, err
				}
				d.Dims = first
				if d.ReshapeDims, err = ints(']'); err != nil {
					return nil, err
				}
			}
			if p.is('w', "T") {
				p.i++
				if _, err := p.expect('(', ""); err != nil {
					return nil, err
				}
				if d.Transpose, err = ints(')'); err != nil {
					return nil, err
				}
			}
			if _, err := p.expect(')', ""); err != nil {
				return nil, err
			}
		} else if d.List, err = ints(')'); err != nil {
			return nil, err
		}
		m.DeviceIDs = d
		p.got(',')
	}
	devs, err := m.Devices()
	if err != nil {
		return nil, err
	}
	switch {
	case p.is('w', "replicated") && p.i+1 == len(p.toks):
		return &tileSharding{Replicated: true}, nil
	case p.is('w', "manual") && p.i+1 == len(p.toks):
		return &tileSharding{Manual: true}, nil
	case p.is('w', "unreduced"):
		return nil, fmt.Errorf("unreduced shardings are not supported")
	}
	if _, err := p.expect('[', ""); err != nil {
		return nil, err
	}
	var dims [][]hlo.AxisRef
	for !p.got(']') {
		if _, err := p.expect('{', ""); err != nil {
			return nil, err
		}
		var refs []hlo.AxisRef
		for !p.got('}') {
			if p.got('?') {
				p.got(',')
				continue
			}
			t := p.peek()
			if t.kind != 's' && t.kind != 'w' {
				return nil, fmt.Errorf("expected an axis name, found %q", t.text)
			}
			p.i++
			r := hlo.AxisRef{Name: t.text}
			if p.got(':') {
				if _, err := p.expect('(', ""); err != nil {
					return nil, err
				}
				if r.PreSize, err = p.int(); err != nil {
					return nil, err
				}
				if _, err := p.expect(')', ""); err != nil {
					return nil, err
				}
				if r.Size, err = p.int(); err != nil {
					return nil, err
				}
			}
			if m.AxisIndex(r.Name) < 0 {
				return nil, fmt.Errorf("axis %q is not in the mesh", r.Name)
			}
			refs = append(refs, r)
			p.got(',')
		}
		dims = append(dims, refs)
		p.got(',')
	}
	for p.got(',') {
		kw, err := p.expect('w', "")
		if err != nil {
			return nil, err
		}
		if kw != "replicated" {
			return nil, fmt.Errorf("%s axes are not supported", kw)
		}
		if _, err := p.expect('=', ""); err != nil {
			return nil, err
		}
		if _, err := p.expect('{', ""); err != nil {
			return nil, err
		}
		for !p.got('}') {
			p.i++ // replicated axes only say who holds copies
		}
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.peek().text)
	}
	var all []hlo.AxisRef
	for _, refs := range dims {
		all = append(all, refs...)
	}
	if err := (&hlo.MeshAxesReplicaGroups{Mesh: *m, Axes: all}).Validate(); err != nil {
		return nil, err
	}
	// Each device's block: its coordinates in the dimensions' axes, mixed
	// radix; devices holding the same block are its replicas.
	ts := &tileSharding{DataRank: len(dims)}
	for _, refs := range dims {
		n := int64(1)
		for _, r := range refs {
			n *= refSize(m, r)
		}
		ts.Tiles = append(ts.Tiles, n)
	}
	blocks := int64(1)
	for _, t := range ts.Tiles {
		blocks *= t
	}
	reps := int64(len(devs)) / blocks
	ts.Tiles = append(ts.Tiles, reps)
	ts.Devices = make([]int64, len(devs))
	seen := make([]int64, blocks)
	for flat, dev := range devs {
		coord := make([]int64, len(m.Axes))
		for i, rest := len(m.Axes)-1, int64(flat); i >= 0; i-- {
			coord[i] = rest % m.Axes[i].Size
			rest /= m.Axes[i].Size
		}
		b := int64(0)
		for d, refs := range dims {
			v := int64(0)
			for _, r := range refs {
				ai := m.AxisIndex(r.Name)
				c := coord[ai]
				if r.Size != 0 {
					c = c / (m.Axes[ai].Size / (r.PreSize * r.Size)) % r.Size
				}
				v = v*refSize(m, r) + c
			}
			b = b*ts.Tiles[d] + v
		}
		if seen[b] >= reps {
			return nil, fmt.Errorf("the axes of the dimensions overlap")
		}
		ts.Devices[b*reps+seen[b]] = dev
		seen[b]++
	}
	return ts, nil
}
