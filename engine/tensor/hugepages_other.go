//go:build !linux

package tensor

func adviseHugePages([]byte) {}

// AdviseHugePages is adviseHugePages for scratch storage of other
// packages (the GEMM's packing buffers).
func AdviseHugePages([]byte) {}
