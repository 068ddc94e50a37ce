package npy

import (
	"fmt"
	"strconv"

	"goldtrace/engine/dtype"
)

// The descrs numpy writes for the types it knows itself.
var plainDescrs = map[dtype.Type]string{
	dtype.Pred: "|b1",
	dtype.S8:   "|i1", dtype.S16: "<i2", dtype.S32: "<i4", dtype.S64: "<i8",
	dtype.U8: "|u1", dtype.U16: "<u2", dtype.U32: "<u4", dtype.U64: "<u8",
	dtype.F16: "<f2", dtype.F32: "<f4", dtype.F64: "<f8",
	dtype.C64: "<c8", dtype.C128: "<c16",
}

func plainDescr(t dtype.Type) (string, bool) {
	d, ok := plainDescrs[t]
	return d, ok
}

// parsedDescr is a decoded descr string.
type parsedDescr struct {
	kind     byte // numpy kind: b i u f c V
	size     int  // itemsize in bytes
	big      bool // stored big-endian
	typ      dtype.Type
	rawBytes bool // V, or u1/u2/i1/i2 raw bits a sidecar may reinterpret
}

// parseDescr decodes a simple descr such as '<f4', '|b1', '>i8', '<V2'.
// typ is Invalid for void data, whose type must come from elsewhere.
func parseDescr(s string) (parsedDescr, error) {
	var d parsedDescr
	if len(s) < 2 {
		return d, fmt.Errorf("unsupported dtype descr %q", s)
	}
	body := s
	switch s[0] {
	case '<', '|', '=': // '=' is native order: every platform we run on is little-endian
		body = s[1:]
	case '>':
		d.big = true
		body = s[1:]
	}
	if len(body) < 2 {
		return d, fmt.Errorf("unsupported dtype descr %q", s)
	}
	d.kind = body[0]
	n, err := strconv.Atoi(body[1:])
	if err != nil || n <= 0 || n > 16 {
		return d, fmt.Errorf("unsupported dtype descr %q", s)
	}
	d.size = n
	key := string(d.kind) + body[1:]
	switch key {
	case "b1":
		d.typ = dtype.Pred
	case "i1":
		d.typ, d.rawBytes = dtype.S8, true
	case "i2":
		d.typ, d.rawBytes = dtype.S16, true
	case "i4":
		d.typ = dtype.S32
	case "i8":
		d.typ = dtype.S64
	case "u1":
		d.typ, d.rawBytes = dtype.U8, true
	case "u2":
		d.typ, d.rawBytes = dtype.U16, true
	case "u4":
		d.typ = dtype.U32
	case "u8":
		d.typ = dtype.U64
	case "f1":
		// ml_dtypes registers float8_e5m2 with kind 'f', so np.save writes '<f1'.
		d.typ = dtype.F8E5M2
	case "f2":
		d.typ = dtype.F16
	case "f4":
		d.typ = dtype.F32
	case "f8":
		d.typ = dtype.F64
	case "c8":
		d.typ = dtype.C64
	case "c16":
		d.typ = dtype.C128
	case "V1", "V2":
		d.rawBytes = true
	default:
		return d, fmt.Errorf("unsupported dtype descr %q", s)
	}
	return d, nil
}

// resolveType picks the element type of the data: the descr's own, or the
// one named by a sidecar or the caller, which may reinterpret raw bits (void
// data, or ml_dtypes arrays saved through .view(np.uint8 / np.uint16)).
func resolveType(d parsedDescr, descr string, want *dtype.Type, source string) (dtype.Type, error) {
	if want == nil {
		if d.typ == dtype.Invalid {
			return dtype.Invalid, fmt.Errorf("npy: void dtype %q holds an ml_dtypes type: it needs a %s sidecar or an explicit element type", descr, "*.npy"+MetaSuffix)
		}
		return d.typ, nil
	}
	t := *want
	if t == d.typ {
		return t, nil
	}
	if t.Size() != d.size {
		return dtype.Invalid, fmt.Errorf("npy: %s says %s (%d bytes per element) but the data is %q (%d bytes)", source, t.NumpyName(), t.Size(), descr, d.size)
	}
	if _, plain := plainDescr(t); plain || !(d.rawBytes || d.typ == dtype.F8E5M2) {
		return dtype.Invalid, fmt.Errorf("npy: %s says %s but the data is %q", source, t.NumpyName(), descr)
	}
	return t, nil
}
