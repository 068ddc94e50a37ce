//go:build !linux

package eval

import "time"

var clockStart = time.Now()

// threadCPU falls back to wall time where the thread clock is not wired up.
func threadCPU() float64 { return time.Since(clockStart).Seconds() }

// procCPU falls back to wall time.
func procCPU() float64 { return threadCPU() }
