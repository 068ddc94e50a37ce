package hlo

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// token is the kind of a lexical token of HLO text.
type token int

const (
	tEOF     token = iota
	tIllegal       // a character no token starts with
	tWord          // names, keywords, numbers, element types, dim strings ("3x3", "0_1x2_2")
	tString        // a quoted string; lit holds the unescaped value
	tLBrace
	tRBrace
	tLBrack
	tRBrack
	tLParen
	tRParen
	tComma
	tEqual
	tColon
	tArrow // ->
	tLeq   // <=
	tStar
	tQuestion
)

var tokenNames = [...]string{
	tEOF: "end of file", tIllegal: "illegal character", tWord: "word", tString: "string",
	tLBrace: "'{'", tRBrace: "'}'", tLBrack: "'['", tRBrack: "']'", tLParen: "'('", tRParen: "')'",
	tComma: "','", tEqual: "'='", tColon: "':'", tArrow: "'->'", tLeq: "'<='", tStar: "'*'", tQuestion: "'?'",
}

func (t token) String() string { return tokenNames[t] }

// Position is a place in a source file; Line and Column count from 1, Column in bytes.
type Position struct {
	Filename string
	Offset   int
	Line     int
	Column   int
}

func (p Position) String() string {
	s := p.Filename
	if s != "" {
		s += ":"
	}
	return fmt.Sprintf("%s%d:%d", s, p.Line, p.Column)
}

// SyntaxError is one error in HLO text, with its position and the offending text.
type SyntaxError struct {
	Pos  Position
	Msg  string
	Near string // the source text at the error, "" at end of file
}

func (e *SyntaxError) Error() string {
	if e.Near == "" {
		return fmt.Sprintf("%v: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("%v: %s (at %q)", e.Pos, e.Msg, e.Near)
}

// ErrorList is a list of syntax errors sorted by position; it is the error type
// ParseText returns.
type ErrorList []*SyntaxError

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0], len(l)-1)
}

// Sort orders the list by source offset.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos.Offset < l[j].Pos.Offset })
}

// scanner splits HLO text into tokens. It keeps no lookahead beyond the
// current token, so the parser can snapshot it by copying.
type scanner struct {
	src []byte
	off int // next byte to read
	err func(off int, msg string)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == '+' || c == '$' || c == '#'
}

// skipSpace skips white space and comments; an unterminated block comment is an error.
func (s *scanner) skipSpace() {
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.off++
		case c == '/' && s.off+1 < len(s.src) && s.src[s.off+1] == '/':
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.off++
			}
		case c == '/' && s.off+1 < len(s.src) && s.src[s.off+1] == '*':
			end := bytes.Index(s.src[s.off+2:], []byte("*/"))
			if end < 0 {
				s.err(s.off, "unterminated comment")
				s.off = len(s.src)
				return
			}
			s.off += end + 4
		default:
			return
		}
	}
}

// scan returns the next token, its start offset and its literal text.
func (s *scanner) scan() (tok token, pos int, lit string) {
	s.skipSpace()
	pos = s.off
	if s.off >= len(s.src) {
		return tEOF, pos, ""
	}
	c := s.src[s.off]
	s.off++
	switch c {
	case '{':
		return tLBrace, pos, "{"
	case '}':
		return tRBrace, pos, "}"
	case '[':
		return tLBrack, pos, "["
	case ']':
		return tRBrack, pos, "]"
	case '(':
		return tLParen, pos, "("
	case ')':
		return tRParen, pos, ")"
	case ',':
		return tComma, pos, ","
	case '=':
		return tEqual, pos, "="
	case ':':
		return tColon, pos, ":"
	case '*':
		return tStar, pos, "*"
	case '?':
		return tQuestion, pos, "?"
	case '<':
		if s.off < len(s.src) && s.src[s.off] == '=' {
			s.off++
			return tLeq, pos, "<="
		}
		return tIllegal, pos, "<"
	case '"':
		return s.scanString(pos)
	case '\'':
		// Newer XLA quotes mesh axis names with single quotes: mesh['x'=4].
		return s.scanQuoted(pos, '\'')
	case '%':
		// '%' only prefixes names; the name itself is the literal.
		if s.off < len(s.src) && isWordByte(s.src[s.off]) {
			t, _, l := s.scanWord(s.off)
			return t, pos, l
		}
		return tIllegal, pos, "%"
	case '-':
		if s.off < len(s.src) && s.src[s.off] == '>' {
			s.off++
			return tArrow, pos, "->"
		}
	}
	if isWordByte(c) {
		return s.scanWord(pos)
	}
	return tIllegal, pos, string(c)
}

func (s *scanner) scanWord(start int) (token, int, string) {
	s.off = start
	for s.off < len(s.src) && isWordByte(s.src[s.off]) {
		// "->" ends a word: dim_labels are written b01f_01io->b01f.
		if s.src[s.off] == '-' && s.off+1 < len(s.src) && s.src[s.off+1] == '>' {
			break
		}
		s.off++
	}
	return tWord, start, string(s.src[start:s.off])
}

// scanString scans a C-escaped string (XLA writes strings with absl::CEscape).
func (s *scanner) scanString(pos int) (token, int, string) { return s.scanQuoted(pos, '"') }

// scanQuoted scans a C-escaped string that ends at the quote character q.
func (s *scanner) scanQuoted(pos int, q byte) (token, int, string) {
	var b strings.Builder
	for {
		if s.off >= len(s.src) {
			s.err(pos, "unterminated string")
			return tString, pos, b.String()
		}
		c := s.src[s.off]
		s.off++
		switch c {
		case q:
			return tString, pos, b.String()
		case '\\':
			if s.off >= len(s.src) {
				continue
			}
			e := s.src[s.off]
			s.off++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'x':
				v, n := 0, 0
				for n < 2 && s.off < len(s.src) && hexVal(s.src[s.off]) >= 0 {
					v = v*16 + hexVal(s.src[s.off])
					s.off++
					n++
				}
				if n == 0 {
					s.err(s.off-2, "invalid \\x escape in string")
				}
				b.WriteByte(byte(v))
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v, n := int(e-'0'), 1
				for n < 3 && s.off < len(s.src) && s.src[s.off] >= '0' && s.src[s.off] <= '7' {
					v = v*8 + int(s.src[s.off]-'0')
					s.off++
					n++
				}
				b.WriteByte(byte(v))
			default: // \" \\ \' \? and anything else stand for themselves
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
}

func hexVal(c byte) int {
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

// rawBraces returns the source text of the balanced {...} group starting at
// offset start (which must hold '{'), skipping strings and comments, and moves
// the scanner past it.
func (s *scanner) rawBraces(start int) (string, bool) {
	depth := 0
	s.off = start
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch c {
		case '"':
			s.off++
			s.scanString(s.off - 1)
			continue
		case '/':
			if s.off+1 < len(s.src) && (s.src[s.off+1] == '*' || s.src[s.off+1] == '/') {
				s.skipSpace()
				continue
			}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				s.off++
				return string(s.src[start:s.off]), true
			}
		}
		s.off++
	}
	return string(s.src[start:]), false
}

// quote writes s as an HLO string literal, escaping what the scanner unescapes.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// position converts a byte offset into a line:column position.
func position(src []byte, filename string, off int) Position {
	if off > len(src) {
		off = len(src)
	}
	line, col := 1, 1
	for _, c := range src[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return Position{Filename: filename, Offset: off, Line: line, Column: col}
}
