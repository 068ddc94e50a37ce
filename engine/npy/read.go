package npy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// maxMetaLen bounds the sidecar we read; real ones are a few dozen bytes.
const maxMetaLen = 64 << 10

// Read decodes one .npy stream into a row-major little-endian tensor. meta,
// if not nil, names the element type of void ('|V1', '|V2'), '<f1' or raw
// integer data (see ReadFile); without it void data is an error.
//
// When r can tell how many bytes remain (*os.File, *bytes.Reader,
// *bytes.Buffer, *strings.Reader), the data length is checked against the
// header before anything is allocated; otherwise data is read in bounded
// chunks, so a lying header cannot make Read allocate more than the input
// holds. Trailing bytes after the data are an error.
func Read(r io.Reader, meta *Meta) (*tensor.Tensor, error) {
	var want *dtype.Type
	if meta != nil {
		t, err := meta.Type()
		if err != nil {
			return nil, err
		}
		want = &t
	}
	return read(r, want, "the .meta sidecar")
}

func read(r io.Reader, want *dtype.Type, source string) (*tensor.Tensor, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	d, err := parseDescr(h.descr)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	t, err := resolveType(d, h.descr, want, source)
	if err != nil {
		return nil, err
	}
	if err := tensor.CheckShape(t, h.shape); err != nil {
		return nil, fmt.Errorf("npy: shape %v: %w", h.shape, err)
	}
	n := tensor.NumElements(h.shape)
	nbytes := n * int64(d.size)
	var out *tensor.Tensor
	if rem, ok := remaining(r); ok {
		if rem != nbytes {
			return nil, fmt.Errorf("npy: %v data: header needs %d bytes of data, the input holds %d", tensor.ShapeString(t, h.shape), nbytes, rem)
		}
		// The size is known to be there: read straight into the tensor.
		out = tensor.New(t, h.shape)
		if _, err := io.ReadFull(r, out.Data); err != nil {
			return nil, fmt.Errorf("npy: %v data: %w", out, eofIsUnexpected(err))
		}
	} else {
		data, err := readStream(r, nbytes)
		if err != nil {
			return nil, fmt.Errorf("npy: %v data: %w", tensor.ShapeString(t, h.shape), err)
		}
		if out, err = tensor.FromBytes(t, h.shape, data); err != nil {
			return nil, err
		}
	}
	if d.big {
		swapBytes(out.Data, t)
	}
	if h.fortran && len(h.shape) > 1 {
		c := tensor.New(t, h.shape) // aligned like every tensor, for typed views
		fortranToC(c.Data, out.Data, h.shape, d.size)
		out = c
	}
	normalize(out.Data, t)
	return out, nil
}

// remaining reports how many unread bytes r holds, if it can tell.
func remaining(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Len() int }: // bytes.Reader, bytes.Buffer, strings.Reader
		return int64(v.Len()), true
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return st.Size() - pos, true
	}
	return 0, false
}

// readStream reads exactly n bytes from a reader of unknown length, growing
// its buffer only with data actually read, and checks that nothing follows.
func readStream(r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, r, n)
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("header needs %d bytes of data, the input holds %d", n, got)
		}
		return nil, err
	}
	var one [1]byte
	if k, _ := io.ReadFull(r, one[:]); k > 0 {
		return nil, fmt.Errorf("header needs %d bytes of data, the input holds more", n)
	}
	return buf.Bytes(), nil
}

// swapBytes converts big-endian elements to little-endian in place; complex
// values swap each component.
func swapBytes(b []byte, t dtype.Type) {
	w := t.Size()
	if t.IsComplex() {
		w /= 2
	}
	if w == 1 {
		return
	}
	for i := 0; i+w <= len(b); i += w {
		e := b[i : i+w]
		for j, k := 0, w-1; j < k; j, k = j+1, k-1 {
			e[j], e[k] = e[k], e[j]
		}
	}
}

// fortranToC copies column-major src into dst in row-major order.
func fortranToC(dst, src []byte, shape []int64, size int) {
	if len(src) == 0 {
		return
	}
	rank := len(shape)
	// Column-major strides, in elements.
	fstride := make([]int64, rank)
	acc := int64(1)
	for i := range rank {
		fstride[i] = acc
		acc *= shape[i]
	}
	idx := make([]int64, rank)
	var off int64 // column-major offset of idx
	n := int64(len(src) / size)
	for i := range n {
		copy(dst[i*int64(size):(i+1)*int64(size)], src[off*int64(size):(off+1)*int64(size)])
		// Advance idx in row-major order, tracking off.
		for k := rank - 1; k >= 0; k-- {
			idx[k]++
			off += fstride[k]
			if idx[k] < shape[k] {
				break
			}
			off -= idx[k] * fstride[k]
			idx[k] = 0
		}
	}
}

// normalize makes stored values canonical for the tensor: pred bytes become
// 0/1 (Go bools must be), sub-byte elements keep only their low bits.
func normalize(b []byte, t dtype.Type) {
	switch {
	case t == dtype.Pred:
		for i, c := range b {
			if c != 0 {
				b[i] = 1
			}
		}
	case t.IsSubByte():
		mask := byte(1)<<t.Bits() - 1
		for i := range b {
			b[i] &= mask
		}
	}
}

// ReadFile reads a .npy file and, if present, its "<path>.meta" sidecar.
func ReadFile(path string) (*tensor.Tensor, error) {
	meta, err := readMetaFile(path + MetaSuffix)
	if err != nil {
		return nil, err
	}
	var want *dtype.Type
	if meta != nil {
		t, _ := meta.Type() // validated by ParseMeta
		want = &t
	}
	return readFile(path, want, path+MetaSuffix)
}

// ReadFileAs reads a .npy file whose element type must be t, for callers that
// know it (e.g. from an HLO parameter): t names the type of void or raw-bits
// data that has no sidecar. A sidecar that names a different type, or plain
// data of another type, is an error; nothing is converted.
func ReadFileAs(path string, t dtype.Type) (*tensor.Tensor, error) {
	meta, err := readMetaFile(path + MetaSuffix)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		if mt, _ := meta.Type(); mt != t {
			return nil, fmt.Errorf("npy: %s: sidecar says %s, expected %s", path, meta.MLDtype, t.NumpyName())
		}
	}
	out, err := readFile(path, &t, "the expected element type")
	if err != nil {
		return nil, err
	}
	return out, nil
}

func readFile(path string, want *dtype.Type, source string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := read(f, want, source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// readMetaFile returns the parsed sidecar, or nil if there is none.
func readMetaFile(path string) (*Meta, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetaLen+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxMetaLen {
		return nil, fmt.Errorf("%s: sidecar larger than %d bytes", path, maxMetaLen)
	}
	m, err := ParseMeta(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}
