package golden

import (
	"fmt"
	"os"

	"goldtrace/engine/hlo"
	"goldtrace/engine/hlo/hloproto"
	"goldtrace/engine/tensor"
)

// Module types accepted by LoadModule (the CLI's -t/--module-type).
const (
	ModuleAuto     = ""         // detect: HLO text, else HloSnapshot, HloProto, HloModuleProto
	ModuleText     = "text"     // HLO text
	ModuleProto    = "proto"    // HloModuleProto (or HloProto / HloModuleProtoWithConfig)
	ModuleSnapshot = "snapshot" // HloSnapshot: a module plus its arguments
)

// Loaded is a module read from a file, with the arguments a snapshot carries.
type Loaded struct {
	Module *hlo.Module
	// Args are the snapshot's arguments as flattened parameter leaves (see
	// ParamLeaves); nil unless the file was an HloSnapshot with arguments.
	Args []*tensor.Tensor
	// Kind is what the file turned out to be: "text", "snapshot", "hlo_proto"
	// or "module_proto".
	Kind string
}

// LoadModule reads the module at path. moduleType is one of ModuleAuto,
// ModuleText, ModuleProto or ModuleSnapshot. Every failure is a *ModuleError
// naming the file.
func LoadModule(path, moduleType string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ModuleError{File: path, Err: err}
	}
	return LoadModuleBytes(data, path, moduleType)
}

// LoadModuleBytes is LoadModule on the contents of a file; source names it in
// errors (and in parse positions). The module is verified before it is
// returned.
func LoadModuleBytes(data []byte, source, moduleType string) (*Loaded, error) {
	l, err := loadModuleBytes(data, source, moduleType)
	if err != nil {
		return nil, &ModuleError{File: source, Err: err}
	}
	if l.Module == nil || l.Module.Entry == nil {
		return nil, &ModuleError{File: source, Err: fmt.Errorf("module has no entry computation")}
	}
	if err := hlo.Verify(l.Module); err != nil {
		return nil, &ModuleError{File: source, Err: fmt.Errorf("invalid module: %w", err)}
	}
	return l, nil
}

func loadModuleBytes(data []byte, path, moduleType string) (*Loaded, error) {
	switch moduleType {
	case ModuleText:
		m, err := hlo.ParseText(data, path)
		return &Loaded{Module: m, Kind: hloproto.KindText}, err
	case ModuleProto:
		m, err := hloproto.ReadModule(data)
		if err != nil {
			// HloProto / HloModuleProtoWithConfig wrap the module; Load knows them.
			m2, _, kind, err2 := hloproto.Load(data)
			if err2 == nil && kind == hloproto.KindHloProto {
				return &Loaded{Module: m2, Kind: kind}, nil
			}
		}
		return &Loaded{Module: m, Kind: hloproto.KindModuleProto}, err
	case ModuleSnapshot:
		m, args, err := hloproto.ReadSnapshot(data)
		if err != nil {
			return nil, err
		}
		return snapshotLoaded(m, args)
	case ModuleAuto:
		m, args, kind, err := hloproto.Load(data)
		if kind == hloproto.KindText {
			// Re-parse with the file name so parse errors carry file:line:col.
			m, err = hlo.ParseText(data, path)
			return &Loaded{Module: m, Kind: kind}, err
		}
		if err != nil {
			return nil, err
		}
		if kind == hloproto.KindSnapshot {
			return snapshotLoaded(m, args)
		}
		return &Loaded{Module: m, Kind: kind}, nil
	}
	return nil, usageErrorf("unknown module type %q (want text, proto or snapshot)", moduleType)
}

func snapshotLoaded(m *hlo.Module, args []*hlo.Literal) (*Loaded, error) {
	l := &Loaded{Module: m, Kind: hloproto.KindSnapshot}
	for _, a := range args {
		l.Args = append(l.Args, literalLeaves(a)...)
	}
	return l, nil
}

func literalLeaves(l *hlo.Literal) []*tensor.Tensor {
	if l == nil {
		return nil
	}
	if l.Tensor != nil {
		return []*tensor.Tensor{l.Tensor}
	}
	var out []*tensor.Tensor
	for _, e := range l.Tuple {
		out = append(out, literalLeaves(e)...)
	}
	return out
}
