//go:build !amd64

package hostcpu

func detect() Features { return Features{} }
