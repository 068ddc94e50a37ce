package golden

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"goldtrace/engine/npy"
	"goldtrace/engine/tensor"
)

// IntermediatesIndex is the file, next to the value_intermediate<i>.npy
// files, that says which instruction each one holds.
const IntermediatesIndex = "intermediates.json"

// IntermediateEntry is one record of IntermediatesIndex.
type IntermediateEntry struct {
	Index       int    `json:"index"`
	File        string `json:"file"`
	Device      int    `json:"device"`
	Computation string `json:"computation"`
	Instruction string `json:"instruction"`
	Opcode      string `json:"opcode"`
	TupleIndex  []int  `json:"tuple_index,omitempty"`
	Shape       string `json:"shape"`
}

// OutputFileName is the default name of output leaf i.
func OutputFileName(i int) string { return fmt.Sprintf("value_output%d.npy", i) }

// DeviceDirName is the directory, under the output directory, that holds
// device d's outputs of a multi-device run.
func DeviceDirName(d int) string { return fmt.Sprintf("dev%d", d) }

// IntermediateFileName is the name of intermediate value i.
func IntermediateFileName(i int) string { return fmt.Sprintf("value_intermediate%d.npy", i) }

// WriteOutputs writes res into dir (created if missing): value_output<i>.npy
// for every output leaf, or the given names instead (one per output; relative
// names are relative to dir); without names and with several devices also
// dev<d>/value_output<k>.npy, device d's k-th output; with intermediates
// value_intermediate<i>.npy
// plus IntermediatesIndex. Element types numpy cannot name get a .npy.meta
// sidecar (see engine/npy).
//
// Writing is all or nothing: every file is first written into a temporary
// directory beside its destination, and only when all are written are they
// renamed into place. On failure the temporary directories are removed, and
// files already renamed are removed again, so no partial output set remains
// (a file that a failed run replaced is lost, not restored).
func WriteOutputs(dir string, res *Result, names []string) error {
	if names != nil && len(names) != len(res.Outputs) {
		return usageErrorf("%d output names given for %d outputs", len(names), len(res.Outputs))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &OutputError{Path: dir, Err: err}
	}
	type file struct {
		dest string
		t    *tensor.Tensor
		data []byte // when t is nil: a plain file
	}
	var files []file
	for i, t := range res.Outputs {
		dest := filepath.Join(dir, OutputFileName(i))
		if names != nil {
			dest = names[i]
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(dir, dest)
			}
		}
		files = append(files, file{dest: dest, t: t})
	}
	// With several devices, every device's outputs also go to
	// dev<d>/value_output<i>.npy, device 0 included, so scripts can loop
	// over devices.
	if names == nil && res.Devices > 1 && res.OutputsPerDevice > 0 {
		for i, t := range res.Outputs {
			d, k := i/res.OutputsPerDevice, i%res.OutputsPerDevice
			files = append(files, file{dest: filepath.Join(dir, DeviceDirName(d), OutputFileName(k)), t: t})
		}
	}
	if len(res.Intermediates) > 0 {
		index := make([]IntermediateEntry, len(res.Intermediates))
		for i, x := range res.Intermediates {
			name := IntermediateFileName(i)
			index[i] = IntermediateEntry{Index: i, File: name, Device: x.Device, Computation: x.Computation,
				Instruction: x.Instruction, Opcode: x.Opcode, TupleIndex: x.TupleIndex, Shape: shapeString(x.Value)}
			files = append(files, file{dest: filepath.Join(dir, name), t: x.Value})
		}
		body, err := json.MarshalIndent(index, "", "  ")
		if err != nil {
			return &OutputError{Path: IntermediatesIndex, Err: err}
		}
		files = append(files, file{dest: filepath.Join(dir, IntermediatesIndex), data: append(body, '\n')})
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.dest] {
			return usageErrorf("output file %s named twice", f.dest)
		}
		seen[f.dest] = true
	}

	s := &stager{tmp: map[string]string{}}
	defer s.cleanup()
	staged := make([]string, len(files))
	for i, f := range files {
		tmp, err := s.dirFor(filepath.Dir(f.dest))
		if err != nil {
			return &OutputError{Path: f.dest, Err: err}
		}
		staged[i] = filepath.Join(tmp, fmt.Sprintf("%d-%s", i, filepath.Base(f.dest)))
		if f.t != nil {
			err = npy.WriteFile(staged[i], f.t)
		} else {
			err = os.WriteFile(staged[i], f.data, 0o644)
		}
		if err != nil {
			return &OutputError{Path: f.dest, Err: err}
		}
	}
	for i, f := range files {
		if err := s.place(staged[i], f.dest); err != nil {
			s.rollback()
			return &OutputError{Path: f.dest, Err: err}
		}
	}
	return nil
}

// stager owns the temporary directories of one WriteOutputs call.
type stager struct {
	tmp    map[string]string // destination directory -> its temporary directory
	placed []string          // files renamed into place so far
}

func (s *stager) dirFor(destDir string) (string, error) {
	if t, ok := s.tmp[destDir]; ok {
		return t, nil
	}
	if err := os.MkdirAll(destDir, 0o755); err != nil {
		return "", err
	}
	t, err := os.MkdirTemp(destDir, ".infergoldens-tmp-")
	if err != nil {
		return "", err
	}
	s.tmp[destDir] = t
	return t, nil
}

// place renames a staged file and its sidecar (if any) to dest; a stale
// sidecar at dest is removed so it cannot retype the new file.
func (s *stager) place(staged, dest string) error {
	meta := staged + npy.MetaSuffix
	if _, err := os.Stat(meta); err == nil {
		if err := os.Rename(meta, dest+npy.MetaSuffix); err != nil {
			return err
		}
		s.placed = append(s.placed, dest+npy.MetaSuffix)
	} else if err := os.Remove(dest + npy.MetaSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(staged, dest); err != nil {
		return err
	}
	s.placed = append(s.placed, dest)
	return nil
}

func (s *stager) rollback() {
	for _, p := range s.placed {
		os.Remove(p)
	}
	s.placed = nil
}

func (s *stager) cleanup() {
	for _, t := range s.tmp {
		os.RemoveAll(t)
	}
}
