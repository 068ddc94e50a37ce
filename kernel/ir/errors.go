// Package ir holds goldtrace's kernel IR (the protobuf messages in irpb),
// its serialization (Marshal / Unmarshal), its text form (Format), the
// hardware-rule validator (Validate) and facts derived from it (MatmulMACs).
// The Go builder the tracer drives lives in builder.go.
package ir

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found in a kernel IR: the hardware or IR rule broken,
// where in the kernel's own source, and by which instruction.
type Error struct {
	Rule string // short rule id, e.g. "matmul-stationary-free", "oob"
	Loc  string // "file.py:12" from Kernel.files, "" when the IR carries no position
	Op   string // the instruction as the ISA names it ("nc_matmul"), "" for kernel-level errors
	Msg  string

	// ordering: file index, line and discovery order (Loc text alone would sort
	// "k.py:10" before "k.py:9").
	file, line int32
	seq        int
}

// Error reads like `kernel.py:12: nc_matmul: stationary free size 256 exceeds
// the tensor engine's limit of 128 (rule: matmul-stationary-free)`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Loc != "" {
		b.WriteString(e.Loc)
		b.WriteString(": ")
	}
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Rule != "" {
		b.WriteString(" (rule: ")
		b.WriteString(e.Rule)
		b.WriteString(")")
	}
	return b.String()
}

// ErrorList is every Error found, sorted by source position.
type ErrorList []*Error

// Error joins the messages, one per line.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find the individual *Error values.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list, else the list sorted by position.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	l.sort()
	return l
}

// Rules lists the rule ids in the list, in order (handy in tests and logs).
func (l ErrorList) Rules() []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.Rule
	}
	return out
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		// errors without a position (kernel-level) come first
		if (a.Loc == "") != (b.Loc == "") {
			return a.Loc == ""
		}
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.seq < b.seq
	})
}

// errSink collects errors with positions resolved against the kernel's files.
type errSink struct {
	files []string
	list  ErrorList
	max   int // stop collecting past this many (a fuzzed IR can break one rule a million times)
}

const maxErrors = 200

func (s *errSink) add(rule string, loc locRef, op, format string, args ...any) {
	if s.max == 0 {
		s.max = maxErrors
	}
	if len(s.list) >= s.max {
		return
	}
	e := &Error{Rule: rule, Op: op, Msg: fmt.Sprintf(format, args...), seq: len(s.list)}
	if loc.ok {
		e.file, e.line = loc.file, loc.line
		name := "?"
		if loc.file >= 0 && int(loc.file) < len(s.files) {
			name = s.files[loc.file]
		}
		e.Loc = fmt.Sprintf("%s:%d", name, loc.line)
	}
	s.list = append(s.list, e)
}

// locRef is a resolved Loc (ok = the IR carried one).
type locRef struct {
	file, line int32
	ok         bool
}
