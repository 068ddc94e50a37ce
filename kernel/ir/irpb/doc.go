// Package irpb holds the Go code generated from kernel/ir/proto/kernel_ir.proto
// (`make proto`); do not edit kernel_ir.pb.go by hand.
package irpb
