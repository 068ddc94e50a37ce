// Package config is the backend_config a kernel custom-call carries: base64
// of a JSON object with exactly the 14 keys of the original's schema, one of
// which (serialize_ir_string) is the whole kernel IR, so a config alone is
// enough to rebuild and run the kernel.
//
// The keys and what each holds:
//
//	kernel_version              int       this schema's version (KernelVersion); a reader refuses newer or unknown ones
//	func_name                   string    the kernel function's name
//	grid                        [int]     SPMD launch grid, one entry per dimension ([] = one program instance); equals the IR's grid
//	has_collectives             bool      the kernel communicates across program instances / devices (all_reduce, ...)
//	matmul_mac_count            int       multiply-accumulates of every matmul instruction, summed over loop trip counts and grid instances (ir.MatmulMACs)
//	platform_target             string    the target the kernel was traced for ("trn1", "trn2", ...)
//	platform_target_is_fallback bool      platform_target was assumed (no override, no machine name), not detected
//	opts                        {str:str} compile options the kernel was traced with (additional_compile_opt, mode, ...)
//	serialize_dims              [[int]]   shape of each tensor parameter in call order; equals the IR's inputs' shapes
//	serialize_ir_string         string    base64 (standard, padded) of the protobuf kernel IR (kernel/ir Marshal)
//	tiled                       bool      the IR keeps loops as loops with affine tile accesses (goldtrace's tracer: always true)
//	constant_values             [obj]     compile-time tensor constants the custom-call receives as extra operands after the
//	                                      parameters, in order: {"name": str, "dtype": numpy/ml_dtypes name, "shape": [int],
//	                                      "data": base64 of the little-endian row-major bytes}
//	kernel_return               bool      the kernel returns its outputs (newer API); false: outputs are its trailing arguments (older API)
//	result_is_sequence          bool      the kernel returned a tuple/list (the custom-call result is a tuple even for one output)
package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"

	"goldtrace/engine/dtype"
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// KernelVersion is the backend_config schema version this package writes and
// the newest it reads.
const KernelVersion = 1

// Keys are the backend_config keys, exactly these, in the order Encode writes them.
var Keys = []string{
	"kernel_version", "func_name", "grid", "has_collectives", "matmul_mac_count",
	"platform_target", "platform_target_is_fallback", "opts", "serialize_dims",
	"serialize_ir_string", "tiled", "constant_values", "kernel_return", "result_is_sequence",
}

// Config is one decoded backend_config. Kernel is the IR that
// serialize_ir_string carries.
type Config struct {
	KernelVersion            int               `json:"kernel_version"`
	FuncName                 string            `json:"func_name"`
	Grid                     []int64           `json:"grid"`
	HasCollectives           bool              `json:"has_collectives"`
	MatmulMACCount           int64             `json:"matmul_mac_count"`
	PlatformTarget           string            `json:"platform_target"`
	PlatformTargetIsFallback bool              `json:"platform_target_is_fallback"`
	Opts                     map[string]string `json:"opts"`
	SerializeDims            [][]int64         `json:"serialize_dims"`
	Kernel                   *irpb.Kernel      `json:"-"` // serialize_ir_string
	Tiled                    bool              `json:"tiled"`
	ConstantValues           []ConstantValue   `json:"constant_values"`
	KernelReturn             bool              `json:"kernel_return"`
	ResultIsSequence         bool              `json:"result_is_sequence"`
}

// ConstantValue is one compile-time tensor constant (an extra custom-call
// operand). Data is little-endian, row-major; JSON carries it as base64.
type ConstantValue struct {
	Name  string  `json:"name"`
	Dtype string  `json:"dtype"` // numpy / ml_dtypes name: "int8", "bfloat16", "float32"
	Shape []int64 `json:"shape"`
	Data  []byte  `json:"data"`
}

// FromKernel fills what the IR determines: version, func_name (the kernel's
// name), grid, has_collectives (an all_reduce or cc_* instruction), matmul_mac_count,
// opts (the IR's options), serialize_dims (the parameters' shapes), tiled and
// Kernel. The caller sets the platform target, constants, kernel_return and
// result_is_sequence.
func FromKernel(k *irpb.Kernel) Config {
	c := Config{
		KernelVersion:  KernelVersion,
		FuncName:       k.GetName(),
		Grid:           slices.Clone(k.GetGrid()),
		HasCollectives: hasCollectives(k.GetBody()),
		MatmulMACCount: ir.MatmulMACs(k),
		Opts:           map[string]string{},
		SerializeDims:  inputDims(k),
		Tiled:          true,
		Kernel:         k,
		KernelReturn:   true,
	}
	for key, v := range k.GetOptions() {
		c.Opts[key] = v
	}
	return c
}

func hasCollectives(body []*irpb.Stmt) bool {
	for _, s := range body {
		if in := s.GetInst(); in != nil && (in.Op == "all_reduce" || ir.IsDeviceCollective(in.Op)) {
			return true
		}
		if l := s.GetLoop(); l != nil && hasCollectives(l.Body) {
			return true
		}
	}
	return false
}

func inputDims(k *irpb.Kernel) [][]int64 {
	dims := make([][]int64, 0, len(k.GetInputs()))
	for _, id := range k.GetInputs() {
		var shape []int64
		if id >= 0 && int(id) < len(k.Tensors) {
			shape = slices.Clone(k.Tensors[id].GetShape())
		}
		if shape == nil {
			shape = []int64{}
		}
		dims = append(dims, shape)
	}
	return dims
}

// ErrorKind classifies a backend_config error.
type ErrorKind int

const (
	ErrBase64     ErrorKind = iota + 1 // the config string (or a base64 value inside) is not base64
	ErrJSON                            // not a JSON object
	ErrVersion                         // kernel_version newer than KernelVersion, or not a version at all
	ErrMissingKey                      // one of Keys absent
	ErrExtraKey                        // a key not in Keys, or a key twice
	ErrValue                           // a value of the wrong type or out of range, or disagreeing with the IR
	ErrIR                              // serialize_ir_string does not decode to a kernel IR goldtrace can read
)

var kindNames = map[ErrorKind]string{
	ErrBase64: "bad base64", ErrJSON: "bad JSON", ErrVersion: "unsupported version",
	ErrMissingKey: "missing key", ErrExtraKey: "unexpected key", ErrValue: "bad value", ErrIR: "bad kernel IR",
}

func (k ErrorKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error is a backend_config encode or decode error, naming the key.
type Error struct {
	Kind ErrorKind
	Key  string // the key concerned, "" for the whole config
	Msg  string
	Err  error // underlying error (for ErrIR: the ir.ErrorList)
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("backend_config: ")
	b.WriteString(e.Kind.String())
	if e.Key != "" {
		fmt.Fprintf(&b, " (key %q)", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

func errf(kind ErrorKind, key, format string, args ...any) *Error {
	return &Error{Kind: kind, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Encode checks c and writes it as backend_config: base64 (standard, padded)
// of a compact JSON object with exactly Keys. KernelVersion 0 means the
// current one. The IR is checked (ir.Marshal refuses broken references) and
// grid / serialize_dims must agree with it.
func Encode(c Config) (string, error) {
	if c.KernelVersion == 0 {
		c.KernelVersion = KernelVersion
	}
	if c.KernelVersion != KernelVersion {
		return "", errf(ErrVersion, "kernel_version", "this goldtrace writes kernel_version %d, not %d", KernelVersion, c.KernelVersion)
	}
	if c.Kernel == nil {
		return "", errf(ErrIR, "serialize_ir_string", "no kernel IR")
	}
	irBytes, err := ir.Marshal(c.Kernel)
	if err != nil {
		return "", &Error{Kind: ErrIR, Key: "serialize_ir_string", Msg: err.Error(), Err: err}
	}
	return c.encode(base64.StdEncoding.AppendEncode(nil, irBytes), nil)
}

// Precomputed is what encoding a kernel's config needs from the kernel
// alone, made ahead (while the kernel is validated, say: ir.ValidateMarshal):
// FromKernel's config and the serialized IR.
type Precomputed struct {
	kernel *irpb.Kernel
	config Config
	irB64  []byte     // base64 of the IR
	pre64  *aligned64 // the config's base64 over most of irB64, for the guessed layout; nil: none
}

// Precompute prepares Encode for kernel k; irBytes must be ir.Marshal(k)'s
// bytes (ir.ValidateMarshal's), and k must not change afterwards. guess,
// when not nil, edits FromKernel's config into the one Encode will most
// likely be given (the caller's extras, as far as it can tell): most of the
// config's base64 is then made here. Any config still encodes exactly; one
// whose JSON before the IR differs in length mod 3 from the guess's just
// makes all of it in Encode.
func Precompute(k *irpb.Kernel, irBytes []byte, guess func(*Config)) *Precomputed {
	p := &Precomputed{kernel: k, config: FromKernel(k), irB64: base64.StdEncoding.AppendEncode(nil, irBytes)}
	if guess != nil {
		c := p.Config()
		guess(&c)
		if pre, err := c.jsonBefore(); err == nil {
			p.pre64 = alignedFor(p.irB64, len(pre)%3)
		}
	}
	return p
}

// Config is FromKernel of the kernel (a copy the caller may change).
func (p *Precomputed) Config() Config {
	c := p.config
	c.Grid = slices.Clone(c.Grid)
	c.Opts = maps.Clone(c.Opts)
	c.SerializeDims = slices.Clone(c.SerializeDims)
	for i := range c.SerializeDims {
		c.SerializeDims[i] = slices.Clone(c.SerializeDims[i])
	}
	return c
}

// Encode is Encode(c) (the same string or error) for a config of the
// precomputed kernel, without serializing the IR again.
func (p *Precomputed) Encode(c Config) (string, error) {
	if p.kernel == nil || c.Kernel != p.kernel {
		return Encode(c)
	}
	if c.KernelVersion == 0 {
		c.KernelVersion = KernelVersion
	}
	if c.KernelVersion != KernelVersion {
		return "", errf(ErrVersion, "kernel_version", "this goldtrace writes kernel_version %d, not %d", KernelVersion, c.KernelVersion)
	}
	return c.encode(p.irB64, p.pre64)
}

// encode is Encode once the IR is serialized (irB64: its base64; pre64:
// Precomputed's outer base64 of part of it, or nil).
func (c Config) encode(irB64 []byte, pre64 *aligned64) (string, error) {
	if e := c.check(); e != nil {
		return "", e
	}
	if c.ConstantValues == nil {
		c.ConstantValues = []ConstantValue{}
	}
	for i := range c.ConstantValues {
		if c.ConstantValues[i].Shape == nil {
			c.ConstantValues[i].Shape = []int64{}
		}
		if c.ConstantValues[i].Data == nil {
			c.ConstantValues[i].Data = []byte{}
		}
	}
	// The JSON is pre + irB64 + post: the bulk of the config, base64, needs
	// no JSON escaping, so it is written straight in (the bytes json.Marshal
	// would write).
	pre, err := c.jsonBefore()
	if err != nil {
		return "", err
	}
	var post bytes.Buffer
	post.WriteByte('"')
	for _, key := range Keys[slices.Index(Keys, "serialize_ir_string")+1:] {
		post.WriteByte(',')
		if err := writeKey(&post, key, c.value(key)); err != nil {
			return "", err
		}
	}
	post.WriteByte('}')
	enc := base64.StdEncoding
	out := make([]byte, 0, enc.EncodedLen(len(pre)+len(irB64)+post.Len()))
	if pre64 == nil || len(pre)%3 != pre64.r {
		out = enc.AppendEncode(out, slices.Concat(pre, irB64, post.Bytes()))
		return string(out), nil
	}
	// pre and irB64's first o bytes make whole 3-byte groups; then the
	// aligned part's base64, made ahead; then the rest with post.
	o := (3 - pre64.r) % 3
	n := len(pre64.b64) / 4 * 3
	out = enc.AppendEncode(out, slices.Concat(pre, irB64[:o]))
	out = append(out, pre64.b64...)
	out = enc.AppendEncode(out, slices.Concat(irB64[o+n:], post.Bytes()))
	return string(out), nil
}

// aligned64 is the base64 of irB64[o : o+n] for a config whose JSON before
// the IR is r bytes long mod 3: o = (3-r)%3, n the largest multiple of 3
// that fits. The config's base64 is then made of the base64 of that JSON
// and irB64[:o], this, and the base64 of the rest.
type aligned64 struct {
	r   int
	b64 []byte
}

func alignedFor(irB64 []byte, r int) *aligned64 {
	o := (3 - r) % 3
	if len(irB64) < o {
		return nil
	}
	n := (len(irB64) - o) / 3 * 3
	return &aligned64{r: r, b64: base64.StdEncoding.AppendEncode(nil, irB64[o:o+n])}
}

// jsonBefore is the config's JSON up to the opening quote of
// serialize_ir_string's value.
func (c Config) jsonBefore() ([]byte, error) {
	if c.Grid == nil {
		c.Grid = []int64{}
	}
	if c.Opts == nil {
		c.Opts = map[string]string{}
	}
	if c.SerializeDims == nil {
		c.SerializeDims = [][]int64{}
	}
	var pre bytes.Buffer
	pre.WriteByte('{')
	for i, key := range Keys {
		if i > 0 {
			pre.WriteByte(',')
		}
		if key == "serialize_ir_string" {
			kb, _ := json.Marshal(key)
			pre.Write(kb)
			pre.WriteString(`:"`)
			break
		}
		if err := writeKey(&pre, key, c.value(key)); err != nil {
			return nil, err
		}
	}
	return pre.Bytes(), nil
}

// value is key's value in c (serialize_ir_string aside).
func (c *Config) value(key string) any {
	switch key {
	case "kernel_version":
		return c.KernelVersion
	case "func_name":
		return c.FuncName
	case "grid":
		return c.Grid
	case "has_collectives":
		return c.HasCollectives
	case "matmul_mac_count":
		return c.MatmulMACCount
	case "platform_target":
		return c.PlatformTarget
	case "platform_target_is_fallback":
		return c.PlatformTargetIsFallback
	case "opts":
		return c.Opts
	case "serialize_dims":
		return c.SerializeDims
	case "tiled":
		return c.Tiled
	case "constant_values":
		return c.ConstantValues
	case "kernel_return":
		return c.KernelReturn
	case "result_is_sequence":
		return c.ResultIsSequence
	}
	return nil
}

// writeKey writes "key":value.
func writeKey(b *bytes.Buffer, key string, v any) error {
	kb, _ := json.Marshal(key)
	b.Write(kb)
	b.WriteByte(':')
	vb, err := json.Marshal(v)
	if err != nil {
		return &Error{Kind: ErrValue, Key: key, Msg: err.Error(), Err: err}
	}
	b.Write(vb)
	return nil
}

// check validates the values and their agreement with the IR.
func (c *Config) check() *Error {
	if c.MatmulMACCount < 0 {
		return errf(ErrValue, "matmul_mac_count", "negative count %d", c.MatmulMACCount)
	}
	for i, g := range c.Grid {
		if g < 1 {
			return errf(ErrValue, "grid", "grid[%d] = %d: grid sizes must be >= 1", i, g)
		}
	}
	for i, cv := range c.ConstantValues {
		dt, ok := dtype.FromNumpy(cv.Dtype)
		if !ok {
			return errf(ErrValue, "constant_values", "constant %d (%q): unknown dtype %q", i, cv.Name, cv.Dtype)
		}
		n := big.NewInt(int64(dt.Size()))
		for _, d := range cv.Shape {
			if d < 0 {
				return errf(ErrValue, "constant_values", "constant %d (%q): negative dimension %d", i, cv.Name, d)
			}
			n.Mul(n, big.NewInt(d))
		}
		if !n.IsInt64() || n.Int64() != int64(len(cv.Data)) {
			return errf(ErrValue, "constant_values", "constant %d (%q): %s%v needs %s bytes of data, has %d", i, cv.Name, cv.Dtype, cv.Shape, n, len(cv.Data))
		}
	}
	k := c.Kernel
	if !slices.Equal(c.Grid, k.Grid) {
		return errf(ErrValue, "grid", "grid %v disagrees with the kernel IR's grid %v", c.Grid, k.Grid)
	}
	want := inputDims(k)
	if len(c.SerializeDims) != len(want) {
		return errf(ErrValue, "serialize_dims", "%d shapes for a kernel with %d parameters", len(c.SerializeDims), len(want))
	}
	for i := range want {
		if !slices.Equal(c.SerializeDims[i], want[i]) {
			return errf(ErrValue, "serialize_dims", "parameter %d: shape %v disagrees with the kernel IR's %v", i, c.SerializeDims[i], want[i])
		}
	}
	return nil
}

// Decode reads a backend_config string: base64, a JSON object with exactly
// Keys (kernel_version checked first: a newer or unknown version is an
// ErrVersion whatever else the object holds), each value of its type, and the
// IR in serialize_ir_string (ir.Unmarshal: schema version and references;
// hardware rules are ir.Validate's). It returns the config and its kernel
// (also c.Kernel). Every error is a *Error naming the key.
func Decode(s string) (*Config, *irpb.Kernel, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, nil, &Error{Kind: ErrBase64, Msg: fmt.Sprintf("the config is not standard base64: %v", err), Err: err}
	}
	fields, e := topLevel(raw)
	if e != nil {
		return nil, nil, e
	}
	if e := checkVersion(fields); e != nil {
		return nil, nil, e
	}
	var extra []string
	for key := range fields {
		if !slices.Contains(Keys, key) {
			extra = append(extra, key)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, nil, errf(ErrExtraKey, extra[0], "unexpected key(s) %s (the schema has exactly %d keys)", strings.Join(quoteAll(extra), ", "), len(Keys))
	}
	for _, key := range Keys {
		if _, ok := fields[key]; !ok {
			return nil, nil, errf(ErrMissingKey, key, "the config has no %q", key)
		}
	}
	c := &Config{}
	targets := map[string]any{
		"kernel_version": &c.KernelVersion, "func_name": &c.FuncName, "grid": &c.Grid,
		"has_collectives": &c.HasCollectives, "matmul_mac_count": &c.MatmulMACCount,
		"platform_target": &c.PlatformTarget, "platform_target_is_fallback": &c.PlatformTargetIsFallback,
		"opts": &c.Opts, "serialize_dims": &c.SerializeDims,
		"tiled": &c.Tiled, "constant_values": &c.ConstantValues,
		"kernel_return": &c.KernelReturn, "result_is_sequence": &c.ResultIsSequence,
	}
	for _, key := range Keys {
		if key == "serialize_ir_string" {
			continue
		}
		if e := decodeValue(key, fields[key], targets[key]); e != nil {
			return nil, nil, e
		}
	}
	var irText string
	if e := decodeValue("serialize_ir_string", fields["serialize_ir_string"], &irText); e != nil {
		return nil, nil, e
	}
	irBytes, err := base64.StdEncoding.DecodeString(irText)
	if err != nil {
		return nil, nil, &Error{Kind: ErrBase64, Key: "serialize_ir_string", Msg: fmt.Sprintf("not standard base64: %v", err), Err: err}
	}
	k, err := ir.Unmarshal(irBytes)
	if err != nil {
		return nil, nil, &Error{Kind: ErrIR, Key: "serialize_ir_string", Msg: err.Error(), Err: err}
	}
	c.Kernel = k
	if e := c.check(); e != nil {
		return nil, nil, e
	}
	return c, k, nil
}

func quoteAll(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// topLevel splits a JSON object into its keys' raw values, refusing
// duplicates and trailing data.
func topLevel(raw []byte) (map[string]json.RawMessage, *Error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	bad := func(err error) *Error {
		return &Error{Kind: ErrJSON, Msg: fmt.Sprintf("the decoded config is not a JSON object: %v", err), Err: err}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, bad(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bad(fmt.Errorf("starts with %v", tok))
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, bad(fmt.Errorf("key %v is not a string", tok))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &Error{Kind: ErrJSON, Key: key, Msg: err.Error(), Err: err}
		}
		if _, dup := fields[key]; dup {
			return nil, errf(ErrExtraKey, key, "key %q appears twice", key)
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad(err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, bad(fmt.Errorf("data after the object"))
	}
	return fields, nil
}

func checkVersion(fields map[string]json.RawMessage) *Error {
	v, ok := fields["kernel_version"]
	if !ok {
		return errf(ErrMissingKey, "kernel_version", "the config has no \"kernel_version\" (not a goldtrace backend_config?)")
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return errf(ErrVersion, "kernel_version", "unknown kernel_version %s (this goldtrace reads version %d)", v, KernelVersion)
	}
	i, err := n.Int64()
	switch {
	case err != nil || i < 1:
		return errf(ErrVersion, "kernel_version", "unknown kernel_version %s (this goldtrace reads version %d)", n, KernelVersion)
	case i > KernelVersion:
		return errf(ErrVersion, "kernel_version", "kernel_version %d is newer than this goldtrace reads (version %d); upgrade goldtrace", i, KernelVersion)
	}
	return nil
}

func decodeValue(key string, raw json.RawMessage, dst any) *Error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return errf(ErrValue, key, "null (expected %s)", typeName(key))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return &Error{Kind: ErrValue, Key: key, Msg: fmt.Sprintf("expected %s: %v", typeName(key), err), Err: err}
	}
	return nil
}

func typeName(key string) string {
	switch key {
	case "kernel_version", "matmul_mac_count":
		return "an integer"
	case "func_name", "platform_target", "serialize_ir_string":
		return "a string"
	case "grid":
		return "a list of integers"
	case "opts":
		return "an object of strings"
	case "serialize_dims":
		return "a list of shapes (lists of integers)"
	case "constant_values":
		return `a list of {"name","dtype","shape","data"} objects`
	}
	return "a boolean"
}
