package npy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// descrFor returns the descr written for t: numpy's own for plain types, raw
// void data for the ml_dtypes types (whose name goes into the sidecar).
func descrFor(t dtype.Type) (string, error) {
	if d, ok := plainDescr(t); ok {
		return d, nil
	}
	if !t.IsArray() {
		return "", fmt.Errorf("npy: cannot write element type %v", t)
	}
	return fmt.Sprintf("|V%d", t.Size()), nil
}

// Write encodes t as a C-order .npy stream (version 1, or 2 for headers
// over 64 KiB). ml_dtypes types are written as void data ('|V1', '|V2');
// their type name belongs in a sidecar (see WriteFile and MetaFor).
func Write(w io.Writer, t *tensor.Tensor) error {
	descr, err := descrFor(t.Type)
	if err != nil {
		return err
	}
	if err := tensor.CheckShape(t.Type, t.Dims); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if want := t.NumElements() * int64(t.Type.Size()); int64(len(t.Data)) != want {
		return fmt.Errorf("npy: %v holds %d bytes, expected %d", t, len(t.Data), want)
	}
	if _, err := w.Write(formatHeader(descr, t.Dims)); err != nil {
		return err
	}
	_, err = w.Write(t.Data)
	return err
}

// WriteFile writes t to path, replacing it atomically (temporary file and
// rename). For ml_dtypes types it also writes the "<path>.meta" sidecar, which
// is in place before the .npy appears; for plain types it removes a stale
// sidecar first, so it can never be applied to the new data.
func WriteFile(path string, t *tensor.Tensor) error {
	meta, needMeta := MetaFor(t.Type)
	metaPath := path + MetaSuffix
	if needMeta {
		if err := writeAtomic(metaPath, func(w io.Writer) error {
			_, err := w.Write(meta.encode())
			return err
		}); err != nil {
			return err
		}
	} else if err := os.Remove(metaPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("npy: removing stale sidecar: %w", err)
	}
	return writeAtomic(path, func(w io.Writer) error { return Write(w, t) })
}

// writeAtomic writes a file through a temporary file in the same directory
// and renames it into place.
func writeAtomic(path string, fill func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
