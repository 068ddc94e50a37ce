// Package hlopb is the Go code generated from goldtrace's own subset of XLA's
// protos (engine/hlo/proto/*.proto): HloModuleProto, HloProto, HloSnapshot,
// LiteralProto and what they contain. Regenerate it with `make proto`
// (mk/proto.mk); do not edit the .pb.go files by hand.
package hlopb
