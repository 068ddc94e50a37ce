package golden

import (
	"fmt"

	"goldtrace/engine/hlo"
)

// LoadModuleBytes is LoadModule for a module already in memory (the Python
// API's path); name labels errors the way a file name would.
func LoadModuleBytes(data []byte, name, moduleType string) (*Loaded, error) {
	l, err := loadModuleBytes(data, name, moduleType)
	if err != nil {
		return nil, &ModuleError{File: name, Err: err}
	}
	if l.Module == nil || l.Module.Entry == nil {
		return nil, &ModuleError{File: name, Err: fmt.Errorf("module has no entry computation")}
	}
	if err := hlo.Verify(l.Module); err != nil {
		return nil, &ModuleError{File: name, Err: fmt.Errorf("invalid module: %w", err)}
	}
	return l, nil
}
