package hostcpu

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

func detect() Features {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 1 {
		return Features{}
	}
	_, _, ecx1, _ := cpuid(1, 0)
	var ebx7, edx7, eax71 uint32
	if maxLeaf >= 7 {
		var sub uint32
		sub, ebx7, _, edx7 = cpuid(7, 0)
		if sub >= 1 {
			eax71, _, _, _ = cpuid(7, 1)
		}
	}
	osxsave := ecx1>>27&1 == 1
	var xcr0 uint64
	if osxsave {
		lo, hi := xgetbv()
		xcr0 = uint64(hi)<<32 | uint64(lo)
	}
	f := decode(ecx1, ebx7, edx7, eax71, xcr0, osxsave)
	if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt >= 0x80000001 {
		_, _, ecxExt, _ := cpuid(0x80000001, 0)
		f.SSE4A = ecxExt>>6&1 == 1
	}
	return f
}
