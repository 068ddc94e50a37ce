package golden

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"goldtrace/engine/hlo"
	"goldtrace/engine/npy"
	"goldtrace/engine/tensor"
)

// ReadInputs reads one .npy file per ParamLeaves entry of m (for several
// devices, optionally one set per device, concatenated). A raw-bits file
// with no .npy.meta sidecar takes its parameter's element type. Every failure
// is an *InputError naming the file and the parameter.
func ReadInputs(m *hlo.Module, paths []string, devices int) ([]*tensor.Tensor, error) {
	leaves := ParamLeaves(m)
	n := len(leaves)
	if len(paths) != n && (devices <= 1 || len(paths) != n*devices) {
		want := fmt.Sprint(n)
		if devices > 1 {
			want = fmt.Sprintf("%d (or %d for %d devices)", n, n*devices, devices)
		}
		return nil, &InputError{Param: -1, Input: -1, Err: errors.New("wrong number of input files"),
			Want: want, Got: fmt.Sprint(len(paths))}
	}
	out := make([]*tensor.Tensor, len(paths))
	for i, path := range paths {
		p := leaves[i%max(n, 1)]
		t, err := readInput(path, p)
		if err != nil {
			return nil, &InputError{Param: p.Param, Index: p.Index, Input: i, Name: p.Name, File: path, Err: err}
		}
		out[i] = t
	}
	return out, nil
}

func readInput(path string, p ParamLeaf) (*tensor.Tensor, error) {
	t, err := npy.ReadFile(path)
	if err == nil {
		return t, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such file")
	}
	// Raw bits (|V2 ...) without a sidecar: the parameter says what they are.
	if t2, err2 := npy.ReadFileAs(path, p.Shape.Elem); err2 == nil {
		return t2, nil
	}
	// The error names the file already in InputError.
	if msg, ok := strings.CutPrefix(err.Error(), path+": "); ok {
		return nil, errors.New(msg)
	}
	return nil, err
}
