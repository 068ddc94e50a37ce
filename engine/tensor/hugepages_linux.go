package tensor

import (
	"os"
	"syscall"
	"unsafe"
)

// hugePageMin is the size from which fresh storage asks for transparent
// huge pages.
const hugePageMin = 4 << 20

// noHugePages turns the advice off (GOLDTRACE_NO_HUGEPAGES=1), to compare.
var noHugePages = os.Getenv("GOLDTRACE_NO_HUGEPAGES") == "1"

// adviseHugePages asks the kernel to back the 2 MiB-aligned interior of
// large fresh storage with transparent huge pages (madvise MADV_HUGEPAGE,
// as numpy does for its large arrays; effective where THP is "madvise", as
// on most distributions, moot where it is "always" or "never"). Go's heap
// does not ask for them, so every 4 KiB of a large result took its own
// page fault at first touch: on a 2-core EPYC VM, 13-25 ms for the 8192
// faults of a 32 MB dot result, 3-5 ms with 2 MiB pages. The advice
// changes no contents.
func adviseHugePages(b []byte) {
	const huge = 2 << 20
	if len(b) < hugePageMin || noHugePages {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := (p+huge-1)&^(huge-1), (p+uintptr(len(b)))&^(huge-1)
	if hi > lo {
		_ = syscall.Madvise(b[lo-p:hi-p], 14) // MADV_HUGEPAGE
	}
}
