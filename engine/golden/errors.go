package golden

import (
	"errors"
	"fmt"
	"strings"

	"goldtrace/engine/tensor"
)

// Exit codes of the infergoldens CLI (Main). Each error type below maps to one
// of them through ExitCode, so library callers can classify failures the same
// way the CLI does.
const (
	ExitOK       = 0  // outputs written
	ExitUsage    = 2  // bad flags or arguments
	ExitModule   = 3  // the module could not be read, parsed or verified
	ExitInput    = 4  // an input is missing, corrupt, or has the wrong count, shape or dtype
	ExitEval     = 5  // evaluation failed (including unsupported opcodes and custom-call targets)
	ExitOutput   = 6  // the outputs could not be written
	ExitInternal = 70 // a bug: a recovered panic (EX_SOFTWARE)
)

// UsageError is a bad command line or inconsistent options.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ModuleError is a failure to read, parse or verify a module file.
type ModuleError struct {
	File string
	Err  error
}

func (e *ModuleError) Error() string {
	msg := e.Err.Error()
	if strings.HasPrefix(msg, e.File+":") {
		// Parse errors already start with file:line:col; don't name the file twice.
		return "module " + msg
	}
	return fmt.Sprintf("module %s: %s", e.File, msg)
}
func (e *ModuleError) Unwrap() error { return e.Err }

// InputError is an input that does not fit the module's parameters. Param is
// the parameter number and Input the position in the input list (both -1
// when the error concerns the list as a whole, e.g. a wrong count); they
// differ for tuple parameters (one input per leaf) and per-device inputs.
type InputError struct {
	Param int
	Index []int  // position inside a tuple parameter, nil for array parameters
	Input int    // position in the input list
	Name  string // parameter instruction name, "" when Param < 0
	File  string // the input file, "" for in-memory inputs
	// Want and Got describe the mismatch ("f32[2,3]" vs "bf16[2,3]"), when there is one.
	Want, Got string
	Err       error
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("input")
	if e.Input >= 0 {
		fmt.Fprintf(&b, " #%d", e.Input)
	}
	if e.File != "" {
		fmt.Fprintf(&b, " (%s)", e.File)
	}
	if e.Param >= 0 {
		fmt.Fprintf(&b, " for parameter %d (%%%s)", e.Param, e.Name)
		if e.Index != nil {
			b.WriteString(" " + indexString(e.Index))
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Want != "" || e.Got != "" {
		fmt.Fprintf(&b, ": expected %s, got %s", e.Want, e.Got)
	}
	return b.String()
}

func (e *InputError) Unwrap() error { return e.Err }

// EvalError is a failure while evaluating the module on one device.
type EvalError struct {
	Device int // -1 for a single-device run
	Err    error
}

func (e *EvalError) Error() string {
	if e.Device >= 0 {
		return fmt.Sprintf("evaluation failed on device %d: %v", e.Device, e.Err)
	}
	return fmt.Sprintf("evaluation failed: %v", e.Err)
}

func (e *EvalError) Unwrap() error { return e.Err }

// OutputError is a failure to write an output file.
type OutputError struct {
	Path string
	Err  error
}

func (e *OutputError) Error() string { return fmt.Sprintf("writing %s: %v", e.Path, e.Err) }
func (e *OutputError) Unwrap() error { return e.Err }

// InternalError is a recovered panic: a bug in goldtrace, never bad input.
type InternalError struct{ Value any }

func (e *InternalError) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// ExitCode maps an error returned by this package to the CLI exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var (
		ue *UsageError
		me *ModuleError
		ie *InputError
		ee *EvalError
		oe *OutputError
	)
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &me):
		return ExitModule
	case errors.As(err, &ie):
		return ExitInput
	case errors.As(err, &ee):
		return ExitEval
	case errors.As(err, &oe):
		return ExitOutput
	}
	return ExitInternal
}

func shapeString(t *tensor.Tensor) string { return tensor.ShapeString(t.Type, t.Dims) }
