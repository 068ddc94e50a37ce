package main

import (
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"goldtrace/kernel/ir/irpb"
)

// Until kernel/ir's validator and codec land, the glue is the plain proto codec.

func validateKernel(k *irpb.Kernel) error { return nil }

func marshalKernel(k *irpb.Kernel) ([]byte, error) { return proto.Marshal(k) }

func unmarshalKernel(b []byte) (*irpb.Kernel, error) {
	var k irpb.Kernel
	if err := proto.Unmarshal(b, &k); err != nil {
		return nil, withStatus(statusParse, "kernel IR: %v", err)
	}
	return &k, nil
}

func formatKernel(k *irpb.Kernel) string { return prototext.Format(k) }
