// Package npy reads and writes numpy .npy files (format versions 1, 2 and 3)
// as tensors, including the ml_dtypes types (bfloat16, float8_*, float4_*,
// int1/2/4, uint1/2/4). numpy cannot name those in a header: np.save writes
// them as raw void data ('<V1', '<V2'), except float8_e5m2 which comes out as
// '<f1' (a descr np.load itself rejects). Their real type travels in a sidecar
// file "<file>.npy.meta" holding {"ml_dtype": "<name>"}, or is supplied by the
// caller (for example from an HLO parameter shape).
//
// The codec is our own rather than codeberg.org/sbinet/npyio's: npyio decodes
// into Go values by reflection, knows neither void descrs, '<f1' nor format
// version 3, and allocates from the header's shape before it knows the data is
// there. Here every size is checked (element count overflow,
// tensor.MaxElements, the actual remaining length of the input) before any
// data buffer is allocated.
package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// magic starts every .npy file.
const magic = "\x93NUMPY"

// maxHeaderLen bounds the header dictionary we accept. numpy's own default
// limit (max_header_size) is 10000; we allow more but not unbounded.
const maxHeaderLen = 1 << 20

// header is the parsed header dictionary.
type header struct {
	major, minor byte
	descr        string
	fortran      bool
	shape        []int64
}

// readHeader reads the magic, version and header dictionary from r.
func readHeader(r io.Reader) (*header, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("npy: reading magic: %w", eofIsUnexpected(err))
	}
	if string(pre[:6]) != magic {
		return nil, fmt.Errorf("npy: not a .npy file (magic %q)", pre[:6])
	}
	h := &header{major: pre[6], minor: pre[7]}
	var n int
	switch h.major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", eofIsUnexpected(err))
		}
		n = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", eofIsUnexpected(err))
		}
		u := binary.LittleEndian.Uint32(b[:])
		if u > maxHeaderLen {
			return nil, fmt.Errorf("npy: header length %d exceeds the limit %d", u, maxHeaderLen)
		}
		n = int(u)
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", h.major, h.minor)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("npy: reading %d-byte header: %w", n, eofIsUnexpected(err))
	}
	var text string
	if h.major == 3 {
		if !utf8.Valid(buf) {
			return nil, fmt.Errorf("npy: version 3 header is not valid UTF-8")
		}
		text = string(buf)
	} else {
		// Versions 1 and 2 are latin-1; every byte is one code point.
		var sb strings.Builder
		for _, c := range buf {
			sb.WriteRune(rune(c))
		}
		text = sb.String()
	}
	if err := h.parseDict(text); err != nil {
		return nil, fmt.Errorf("npy: header %q: %w", clip(text), err)
	}
	return h, nil
}

func clip(s string) string {
	s = strings.TrimRight(s, " \n")
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseDict parses numpy's header, a Python dict literal with the keys
// 'descr' (a string; structured descrs are lists, which we reject),
// 'fortran_order' (True/False) and 'shape' (a tuple of ints).
func (h *header) parseDict(s string) error {
	p := &litParser{s: s}
	if !p.eat('{') {
		return fmt.Errorf("expected '{' at offset %d", p.i)
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if !p.eat(':') {
			return fmt.Errorf("expected ':' after key %q", key)
		}
		switch key {
		case "descr":
			if p.peek() == '[' {
				return fmt.Errorf("structured dtypes are not supported")
			}
			if h.descr, err = p.str(); err != nil {
				return err
			}
		case "fortran_order":
			if h.fortran, err = p.boolean(); err != nil {
				return err
			}
		case "shape":
			if h.shape, err = p.intTuple(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected key %q", key)
		}
		if p.eat(',') {
			continue
		}
		if !p.eat('}') {
			return fmt.Errorf("expected ',' or '}' at offset %d", p.i)
		}
		break
	}
	if rest := strings.TrimSpace(p.s[p.i:]); rest != "" {
		return fmt.Errorf("trailing text after the dictionary")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("missing key %q", k)
		}
	}
	return nil
}

// litParser scans the small subset of Python literals numpy headers use.
type litParser struct {
	s string
	i int
}

func (p *litParser) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *litParser) peek() byte {
	p.skip()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *litParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str parses a quoted string without escapes (numpy never writes any).
func (p *litParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", fmt.Errorf("expected a string at offset %d", p.i)
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at offset %d", p.i)
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", fmt.Errorf("escape sequences in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *litParser) boolean() (bool, error) {
	p.skip()
	switch {
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	}
	return false, fmt.Errorf("expected True or False at offset %d", p.i)
}

// intTuple parses "()", "(3,)", "(2, 3)"; Python 2 headers may write "3L".
func (p *litParser) intTuple() ([]int64, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("expected a shape tuple at offset %d", p.i)
	}
	dims := []int64{}
	for {
		if p.eat(')') {
			return dims, nil
		}
		p.skip()
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if start == p.i {
			return nil, fmt.Errorf("expected a non-negative integer at offset %d", p.i)
		}
		d, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dimension %q out of range", p.s[start:p.i])
		}
		if p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		dims = append(dims, d)
		if p.eat(',') {
			continue
		}
		if !p.eat(')') {
			return nil, fmt.Errorf("expected ',' or ')' in shape at offset %d", p.i)
		}
		if len(dims) == 1 {
			// "(3)" is the int 3 in Python, not a tuple; numpy never writes it.
			return nil, fmt.Errorf("one-element shape needs a trailing comma")
		}
		return dims, nil
	}
}

// formatHeader builds a complete header (magic, version, length, dict,
// padding) in the oldest version that can hold it, padded with spaces so the
// data starts on a 64-byte boundary, as numpy does.
func formatHeader(descr string, shape []int64) []byte {
	var d bytes.Buffer
	fmt.Fprintf(&d, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr)
	for i, n := range shape {
		if i > 0 {
			d.WriteString(", ")
		}
		d.WriteString(strconv.FormatInt(n, 10))
	}
	if len(shape) == 1 {
		d.WriteByte(',')
	}
	d.WriteString("), }")
	for _, pre := range []int{10, 12} { // v1: 6+2+2 bytes before the dict; v2: 6+2+4
		total := pre + d.Len() + 1 // the dict ends with '\n'
		pad := (64 - total%64) % 64
		n := d.Len() + pad + 1
		if pre == 10 && n > 0xffff {
			continue
		}
		out := make([]byte, 0, pre+n)
		out = append(out, magic...)
		if pre == 10 {
			out = append(out, 1, 0)
			out = binary.LittleEndian.AppendUint16(out, uint16(n))
		} else {
			out = append(out, 2, 0)
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
		}
		out = append(out, d.Bytes()...)
		out = append(out, bytes.Repeat([]byte{' '}, pad)...)
		return append(out, '\n')
	}
	panic("unreachable")
}
