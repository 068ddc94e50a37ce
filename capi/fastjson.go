package main

import (
	"encoding/base64"
	"encoding/json"

	"goldtrace/kernel/config"
	"goldtrace/kernel/ir"
)

// The two small JSON objects of a dump_config miss (the kernel signature at
// gt_kb_finish, the config extras at gt_kernel_config_encode) are read by a
// scanner of the plain form Python's json.dumps writes: exactly the known
// keys, each at most once; ASCII strings without escapes; integers;
// true/false. Anything else (an escape, null, a float, an unknown or
// repeated key, bad JSON) goes to encoding/json, which then decides; where
// the scanner succeeds it yields what json.Unmarshal would
// (TestFastJSONMatches).

type jsonScan struct {
	s []byte
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips whitespace and reports whether the next byte is c (consumed).
func (p *jsonScan) next(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonScan) str() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			s := string(p.s[start:p.i])
			p.i++
			return s, true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return "", false
		}
	}
	return "", false
}

// integer reads -?(0|[1-9][0-9]*) of at most 18 digits, followed by a
// delimiter (so 1.5 and 1e3 are left to encoding/json).
func (p *jsonScan) integer() (int64, bool) {
	p.ws()
	neg := p.i < len(p.s) && p.s[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var v int64
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		v = v*10 + int64(p.s[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 18 || (n > 1 && p.s[start] == '0') {
		return 0, false
	}
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', ',', ']', '}':
		default:
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *jsonScan) int32v() (int32, bool) {
	v, ok := p.integer()
	if !ok || v != int64(int32(v)) {
		return 0, false
	}
	return int32(v), true
}

func (p *jsonScan) boolean() (bool, bool) {
	p.ws()
	rest := p.s[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// array reads [e, e, ...], elem reading one element.
func (p *jsonScan) array(elem func() bool) bool {
	if !p.next('[') {
		return false
	}
	if p.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.next(']') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// object reads {"k": v, ...}, field reading the value of key k.
func (p *jsonScan) object(field func(key string) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	for {
		k, ok := p.str()
		if !ok || !p.next(':') || !field(k) {
			return false
		}
		if p.next('}') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// fields reads an object of exactly the keys in names, each at most once
// (more than 64 keys are not expected).
func (p *jsonScan) fields(names []string, field func(i int) bool) bool {
	var seen uint64
	return p.object(func(key string) bool {
		for i, n := range names {
			if n == key {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return field(i)
			}
		}
		return false
	})
}

// end: nothing but whitespace left.
func (p *jsonScan) end() bool {
	p.ws()
	return p.i == len(p.s)
}

func scanList[T any](p *jsonScan, elem func() (T, bool)) ([]T, bool) {
	out := []T{} // json.Unmarshal makes [] an empty, non-nil slice
	ok := p.array(func() bool {
		v, ok := elem()
		out = append(out, v)
		return ok
	})
	return out, ok
}

func (p *jsonScan) strMap() (map[string]string, bool) {
	m := map[string]string{}
	ok := p.object(func(key string) bool {
		v, ok := p.str()
		m[key] = v // a repeated key: the last wins, as with json.Unmarshal
		return ok
	})
	return m, ok
}

var signatureKeys = []string{"grid", "inputs", "outputs", "files", "num_cores", "core_grid_dim", "options", "mutable"}

// parseSignature reads gt_kb_finish's kernel signature.
func parseSignature(b []byte) (ir.Signature, error) {
	if sig, ok := scanSignature(b); ok {
		return sig, nil
	}
	var sig ir.Signature
	err := json.Unmarshal(b, &sig)
	return sig, err
}

// scanSignature is parseSignature's scanner; false: left to encoding/json.
func scanSignature(b []byte) (ir.Signature, bool) {
	var sig ir.Signature
	p := &jsonScan{s: b}
	ok := p.fields(signatureKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			sig.Grid, ok = scanList(p, p.integer)
		case 1:
			sig.Inputs, ok = scanList(p, p.int32v)
		case 2:
			sig.Outputs, ok = scanList(p, p.int32v)
		case 3:
			sig.Files, ok = scanList(p, p.str)
		case 4:
			sig.NumCores, ok = p.int32v()
		case 5:
			sig.CoreGridDim, ok = p.int32v()
		case 6:
			sig.Options, ok = p.strMap()
		case 7:
			sig.Mutable, ok = scanList(p, p.int32v)
		}
		return ok
	})
	return sig, ok && p.end()
}

var extrasKeys = []string{"func_name", "platform_target", "platform_target_is_fallback", "opts", "has_collectives",
	"constant_values", "kernel_return", "result_is_sequence"}

var constantKeys = []string{"name", "dtype", "shape", "data"}

func (p *jsonScan) constant() (config.ConstantValue, bool) {
	var c config.ConstantValue
	ok := p.fields(constantKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			c.Name, ok = p.str()
		case 1:
			c.Dtype, ok = p.str()
		case 2:
			c.Shape, ok = scanList(p, p.integer)
		case 3:
			var s string
			if s, ok = p.str(); ok {
				var err error
				c.Data, err = base64.StdEncoding.DecodeString(s)
				ok = err == nil
			}
		}
		return ok
	})
	return c, ok
}

// parseExtras reads gt_kernel_config_encode's extras.
func parseExtras(b []byte) (configExtras, error) {
	if ex, ok := scanExtras(b); ok {
		return ex, nil
	}
	var ex configExtras
	err := json.Unmarshal(b, &ex)
	return ex, err
}

// scanExtras is parseExtras' scanner; false: left to encoding/json.
func scanExtras(b []byte) (configExtras, bool) {
	var ex configExtras
	p := &jsonScan{s: b}
	ok := p.fields(extrasKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			ex.FuncName, ok = p.str()
		case 1:
			ex.PlatformTarget, ok = p.str()
		case 2:
			ex.PlatformTargetIsFallback, ok = p.boolean()
		case 3:
			ex.Opts, ok = p.strMap()
		case 4:
			var v bool
			v, ok = p.boolean()
			ex.HasCollectives = &v
		case 5:
			ex.ConstantValues, ok = scanList(p, p.constant)
		case 6:
			ex.KernelReturn, ok = p.boolean()
		case 7:
			ex.ResultIsSequence, ok = p.boolean()
		}
		return ok
	})
	return ex, ok && p.end()
}
