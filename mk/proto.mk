# Regenerates the Go code for goldtrace's own XLA .proto subset.
# Needs protoc (apt: protobuf-compiler) and protoc-gen-go at the go.mod version:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12

HLO_PROTO_DIR := engine/hlo/proto
HLO_PB_DIR := engine/hlo/hlopb
PROTOC_GEN_GO ?= $(shell go env GOPATH)/bin/protoc-gen-go

.PHONY: proto
proto:
	protoc --plugin=protoc-gen-go=$(PROTOC_GEN_GO) \
		-I $(HLO_PROTO_DIR) \
		--go_out=$(HLO_PB_DIR) --go_opt=paths=source_relative \
		$(HLO_PROTO_DIR)/xla_data.proto $(HLO_PROTO_DIR)/hlo.proto

# The kernel IR (kernel/ir/proto/kernel_ir.proto); generated Go committed.
KIR_PROTO_DIR := kernel/ir/proto
KIR_PB_DIR := kernel/ir/irpb

.PHONY: proto-kernel
proto: proto-kernel
proto-kernel:
	protoc --plugin=protoc-gen-go=$(PROTOC_GEN_GO) \
		-I $(KIR_PROTO_DIR) \
		--go_out=$(KIR_PB_DIR) --go_opt=paths=source_relative \
		$(KIR_PROTO_DIR)/kernel_ir.proto
