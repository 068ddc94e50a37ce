package eval

import (
	"syscall"
	"unsafe"
)

// threadCPU is the calling OS thread's CPU time in seconds. Benchmarks on
// one goroutine (locked to its thread) report rates over it beside wall
// time, so that other processes on a busy machine do not skew them.
func threadCPU() float64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

// procCPU is the process's user+system CPU time in seconds, for benchmarks
// on several goroutines: their rate per CPU-second is what the work cost,
// whatever else shares the machine.
func procCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}
