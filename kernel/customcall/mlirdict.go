package customcall

import (
	"fmt"
	"strings"
)

// A typed-FFI custom-call carries its attributes as an MLIR dictionary
// attribute in backend_config, e.g. `{kernel = "eyJr...", n = 4 : i64}`
// (XLA:CPU parses it with mlir::parseAttribute). The kernel custom-call needs
// one string entry of it; parseMLIRDict reads the dictionary's top level:
// string values decoded, every other value (numbers with types, arrays,
// nested dictionaries, unit entries) kept as raw text.

// mlirEntry is one top-level entry of a dictionary attribute.
type mlirEntry struct {
	Key      string
	IsString bool   // the value is a string literal (Str holds it, unescaped)
	Str      string // the decoded string
	Raw      string // the value's text as written ("" for a unit entry)
}

// mlirDictError locates a dictionary parse error by byte offset.
type mlirDictError struct {
	Off int
	Msg string
}

func (e *mlirDictError) Error() string {
	return fmt.Sprintf("backend_config dictionary, offset %d: %s", e.Off, e.Msg)
}

type mlirScanner struct {
	s   string
	pos int
}

func (p *mlirScanner) errf(format string, args ...any) error {
	return &mlirDictError{Off: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *mlirScanner) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func isBareStart(c byte) bool { return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func isBareChar(c byte) bool {
	return isBareStart(c) || c >= '0' && c <= '9' || c == '$' || c == '.' || c == '-'
}

// str reads a string literal at p.pos (on the opening quote): MLIR's escapes
// \" \\ \n \t and \XX (two hex digits).
func (p *mlirScanner) str() (string, error) {
	start := p.pos
	p.pos++ // "
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\n':
			return "", p.errf("newline in the string literal opened at offset %d", start)
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return "", p.errf("unterminated escape")
			}
			e := p.s[p.pos+1]
			switch e {
			case '"', '\\':
				b.WriteByte(e)
				p.pos += 2
			case 'n':
				b.WriteByte('\n')
				p.pos += 2
			case 't':
				b.WriteByte('\t')
				p.pos += 2
			default:
				if p.pos+2 >= len(p.s) || unhex(e) < 0 || unhex(p.s[p.pos+2]) < 0 {
					return "", p.errf("invalid escape in a string literal")
				}
				b.WriteByte(byte(unhex(e)<<4 | unhex(p.s[p.pos+2])))
				p.pos += 3
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", &mlirDictError{Off: start, Msg: "unterminated string literal"}
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// skipValue moves past a non-string value: everything up to the ',' or '}'
// that ends the entry, with brackets balanced and strings skipped whole.
func (p *mlirScanner) skipValue() error {
	var stack []byte
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch c {
		case '"':
			if _, err := p.str(); err != nil {
				return err
			}
			continue
		case '{', '[', '(', '<':
			stack = append(stack, c)
		case '}', ']', ')', '>':
			if len(stack) == 0 {
				if c == '}' {
					return nil
				}
				if c == '>' { // the arrow of a function type, `(i32) -> i32`
					break
				}
				return p.errf("unbalanced %q", c)
			}
			open := stack[len(stack)-1]
			if c == '>' && open != '<' {
				break // an arrow inside brackets
			}
			if want := map[byte]byte{'{': '}', '[': ']', '(': ')', '<': '>'}[open]; c != want {
				return p.errf("%q closes %q", c, open)
			}
			stack = stack[:len(stack)-1]
		case ',':
			if len(stack) == 0 {
				return nil
			}
		}
		p.pos++
	}
	return p.errf("unterminated dictionary")
}

// parseMLIRDict reads `{key = value, ...}`: keys bare identifiers or string
// literals, each at most once; a key without `= value` is a unit entry.
func parseMLIRDict(s string) ([]mlirEntry, error) {
	p := &mlirScanner{s: s}
	p.skipSpace()
	if p.pos >= len(s) || s[p.pos] != '{' {
		return nil, p.errf("expected '{' (a dictionary attribute such as {kernel = \"...\"})")
	}
	p.pos++
	var out []mlirEntry
	seen := map[string]bool{}
	p.skipSpace()
	if p.pos < len(s) && s[p.pos] == '}' {
		p.pos++
	} else {
		for {
			p.skipSpace()
			if p.pos >= len(s) {
				return nil, p.errf("unterminated dictionary")
			}
			var e mlirEntry
			switch c := s[p.pos]; {
			case c == '"':
				k, err := p.str()
				if err != nil {
					return nil, err
				}
				e.Key = k
			case isBareStart(c):
				start := p.pos
				for p.pos < len(s) && isBareChar(s[p.pos]) {
					p.pos++
				}
				e.Key = s[start:p.pos]
			default:
				return nil, p.errf("expected an attribute name, found %q", c)
			}
			if seen[e.Key] {
				return nil, p.errf("attribute %q appears twice", e.Key)
			}
			seen[e.Key] = true
			p.skipSpace()
			if p.pos < len(s) && s[p.pos] == '=' {
				p.pos++
				p.skipSpace()
				start := p.pos
				if p.pos < len(s) && s[p.pos] == '"' {
					v, err := p.str()
					if err != nil {
						return nil, err
					}
					e.IsString, e.Str = true, v
					// A typed string (`"..." : i32`) is still a string;
					// Raw keeps its type.
					if err := p.skipValue(); err != nil {
						return nil, err
					}
				} else if err := p.skipValue(); err != nil {
					return nil, err
				}
				e.Raw = strings.TrimSpace(s[start:p.pos])
				if e.Raw == "" {
					return nil, p.errf("attribute %q has no value after '='", e.Key)
				}
			}
			out = append(out, e)
			p.skipSpace()
			if p.pos >= len(s) {
				return nil, p.errf("unterminated dictionary")
			}
			if s[p.pos] == ',' {
				p.pos++
				continue
			}
			if s[p.pos] == '}' {
				p.pos++
				break
			}
			return nil, p.errf("expected ',' or '}', found %q", s[p.pos])
		}
	}
	p.skipSpace()
	if p.pos != len(s) {
		return nil, p.errf("text after the dictionary")
	}
	return out, nil
}

// quoteMLIR writes s as an MLIR string literal.
func quoteMLIR(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
