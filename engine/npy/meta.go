package npy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"goldtrace/engine/dtype"
)

// MetaSuffix is appended to a .npy path to name its sidecar.
const MetaSuffix = ".meta"

// Meta is the content of a "<file>.npy.meta" sidecar: the ml_dtypes name of
// the array's element type, which the .npy header cannot express.
type Meta struct {
	MLDtype string `json:"ml_dtype"`
}

// ParseMeta parses a sidecar's JSON. The object must name a known array
// element type in "ml_dtype"; other keys are ignored so newer writers can add
// some.
func ParseMeta(b []byte) (Meta, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Meta{}, fmt.Errorf("npy meta: not a JSON object: %w", err)
	}
	v, ok := raw["ml_dtype"]
	if !ok {
		return Meta{}, fmt.Errorf("npy meta: missing \"ml_dtype\" key")
	}
	var m Meta
	if err := json.Unmarshal(v, &m.MLDtype); err != nil {
		return Meta{}, fmt.Errorf("npy meta: \"ml_dtype\" is not a string: %s", clip(string(v)))
	}
	if _, err := m.Type(); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// Type returns the element type the sidecar names.
func (m Meta) Type() (dtype.Type, error) {
	t, ok := dtype.FromNumpy(m.MLDtype)
	if !ok || !t.IsArray() {
		return dtype.Invalid, fmt.Errorf("npy meta: unknown ml_dtype %q", m.MLDtype)
	}
	return t, nil
}

// MetaFor returns the sidecar a file of element type t needs, and whether it
// needs one: true for the ml_dtypes types, which a .npy header cannot name.
func MetaFor(t dtype.Type) (Meta, bool) {
	if _, ok := plainDescr(t); ok || !t.IsArray() {
		return Meta{}, false
	}
	return Meta{MLDtype: t.NumpyName()}, true
}

// encode renders the sidecar as numpy-side tools write it.
func (m Meta) encode() []byte {
	var b bytes.Buffer
	b.WriteString(`{"ml_dtype": `)
	q, _ := json.Marshal(m.MLDtype)
	b.Write(q)
	b.WriteString("}\n")
	return b.Bytes()
}
