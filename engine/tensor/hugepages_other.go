//go:build !linux

package tensor

func adviseHugePages([]byte) {}
