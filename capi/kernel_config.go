package main

/*
#include <stdlib.h>
#include "goldtrace.h"
*/
import "C"

import (
	"encoding/base64"
	"encoding/json"
	"errors"

	"goldtrace/kernel/config"
	"goldtrace/kernel/ir"
	"goldtrace/kernel/ir/irpb"
)

// gt_kernel_config_encode builds the base64 backend_config of a kernel handle.
//
//export gt_kernel_config_encode
func gt_kernel_config_encode(h C.uint64_t, extrasJSON *C.char, out **C.char, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		k, err := lookupHandle[*irpb.Kernel](uint64(h))
		if err != nil {
			return err
		}
		s, err := encodeKernelConfig(k, []byte(C.GoString(extrasJSON)))
		if err != nil {
			return err
		}
		*out = C.CString(s)
		return nil
	})
}

// decodedConfig is what gt_kernel_config_decode reports: every key of the
// config, serialize_ir_string replaced by the IR's text listing.
type decodedConfig struct {
	Keys   map[string]json.RawMessage `json:"keys"`
	IRText string                     `json:"ir_text"`
}

// gt_kernel_config_decode decodes a backend_config: *outJSON gets the keys
// (serialize_ir_string left as is) plus the IR listing; *kernelOut a kernel
// handle for the IR inside.
//
//export gt_kernel_config_decode
func gt_kernel_config_decode(s *C.char, outJSON **C.char, kernelOut *C.uint64_t, errOut **C.char) C.gt_status {
	return guard(errOut, func() error {
		str := C.GoString(s)
		_, k, err := config.Decode(str)
		if err != nil {
			var ce *config.Error
			if errors.As(err, &ce) && (ce.Kind == config.ErrVersion || ce.Kind == config.ErrIR) {
				return withStatus(statusUnsupported, "backend_config: %v", err)
			}
			return withStatus(statusParse, "backend_config: %v", err)
		}
		raw, _ := base64.StdEncoding.DecodeString(str)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			return withStatus(statusParse, "backend_config: %v", err)
		}
		b, err := json.Marshal(decodedConfig{Keys: keys, IRText: ir.Format(k)})
		if err != nil {
			return err
		}
		*outJSON = C.CString(string(b))
		*kernelOut = C.uint64_t(newHandle(k))
		return nil
	})
}
