package main

/*
#include <stdlib.h>
#include "goldtrace.h"
*/
import "C"

import (
	"encoding/json"
	"os"
	"unsafe"

	"goldtrace/engine/dtype"
	"goldtrace/engine/golden"
	"goldtrace/engine/hlo"
)

// loadedModule is what a module handle refers to.
type loadedModule struct {
	*golden.Loaded
	source string // file name, or "<memory>"
}

func loadModuleBytes(data []byte, kind, source string) (*loadedModule, error) {
	if kind == "auto" {
		kind = ""
	}
	l, err := golden.LoadModuleBytes(data, source, kind)
	if err != nil {
		return nil, err
	}
	return &loadedModule{Loaded: l, source: source}, nil
}

// gt_hlo_load parses and verifies a module from a file (path not NULL) or from
// memory (data, n). kind is "", "text", "proto" or "snapshot".
//
//export gt_hlo_load
func gt_hlo_load(path *C.char, data unsafe.Pointer, n C.int64_t, kind *C.char, out *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		var (
			src    []byte
			source = "<memory>"
		)
		if path != nil {
			source = C.GoString(path)
			b, err := os.ReadFile(source)
			if err != nil {
				return withStatus(statusIO, "cannot read module: %v", err)
			}
			src = b
		} else if n > 0 {
			src = C.GoBytes(data, C.int(n))
		}
		lm, err := loadModuleBytes(src, C.GoString(kind), source)
		if err != nil {
			return err
		}
		*out = C.uint64_t(newHandle(lm))
		return nil
	})
}

type shapeJSON struct {
	Name  string  `json:"name,omitempty"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
}

// gt_hlo_info describes a module as JSON: name, kind, parameters, result leaves.
//
//export gt_hlo_info
func gt_hlo_info(h C.uint64_t, out **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		lm, err := lookupHandle[*loadedModule](uint64(h))
		if err != nil {
			return err
		}
		m := lm.Module
		info := struct {
			Name          string      `json:"name"`
			Kind          string      `json:"kind"`
			Parameters    []shapeJSON `json:"parameters"`
			Results       []shapeJSON `json:"results"`
			NumPartitions int64       `json:"num_partitions"`
			ReplicaCount  int64       `json:"replica_count"`
		}{Name: m.Name, Kind: lm.Kind, Parameters: []shapeJSON{}, Results: []shapeJSON{},
			NumPartitions: max(m.NumPartitions, 1), ReplicaCount: max(m.ReplicaCount, 1)}
		for _, p := range m.Entry.Params {
			info.Parameters = append(info.Parameters, describe(p.Name, p.Shape))
		}
		for _, leaf := range m.Entry.Root.Shape.Leaves() {
			info.Results = append(info.Results, describe("", leaf))
		}
		b, err := json.Marshal(info)
		if err != nil {
			return err
		}
		*out = C.CString(string(b))
		return nil
	})
}

func describe(name string, s hlo.Shape) shapeJSON {
	j := shapeJSON{Name: name, DType: s.Elem.String(), Shape: s.Dims}
	if s.IsTuple() {
		j.DType = dtype.Tuple.String()
	}
	if j.Shape == nil {
		j.Shape = []int64{}
	}
	return j
}

// gt_hlo_text prints the module as canonical HLO text.
//
//export gt_hlo_text
func gt_hlo_text(h C.uint64_t, out **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		lm, err := lookupHandle[*loadedModule](uint64(h))
		if err != nil {
			return err
		}
		*out = C.CString(hlo.Print(lm.Module))
		return nil
	})
}

// gt_hlo_equal compares two loaded modules structurally (hlo.Equal, or
// hlo.EqualIgnoringMetadata when metadata is 0): *equal receives 1 or 0 and
// *where (malloc'ed, may be empty) the first difference.
//
//export gt_hlo_equal
func gt_hlo_equal(a, b C.uint64_t, metadata C.int32_t, equal *C.int32_t, where **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		ma, err := lookupHandle[*loadedModule](uint64(a))
		if err != nil {
			return err
		}
		mb, err := lookupHandle[*loadedModule](uint64(b))
		if err != nil {
			return err
		}
		compare := hlo.Equal
		if metadata == 0 {
			compare = hlo.EqualIgnoringMetadata
		}
		ok, diff := compare(ma.Module, mb.Module)
		*equal = 0
		if ok {
			*equal = 1
		}
		*where = C.CString(diff)
		return nil
	})
}
