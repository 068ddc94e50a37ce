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
	f.L1DataKiB = l1DataKiB(maxLeaf)
	return f
}

// l1DataKiB reads the level-1 data cache size: from the deterministic cache
// parameters of leaf 4 (Intel, and AMD since Zen 2 in leaf 0x8000001D's
// copy) when present, else AMD's leaf 0x80000005 (ECX bits 31-24, KiB).
func l1DataKiB(maxLeaf uint32) int {
	if maxLeaf >= 4 {
		for sub := uint32(0); sub < 16; sub++ {
			eax, ebx, ecx, _ := cpuid(4, sub)
			kind, level := eax&0x1f, eax>>5&0x7
			if kind == 0 {
				break
			}
			if kind == 1 && level == 1 {
				ways, parts, line := ebx>>22+1, ebx>>12&0x3ff+1, ebx&0xfff+1
				return int(ways * parts * line * (ecx + 1) / 1024)
			}
		}
	}
	if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt >= 0x80000005 {
		_, _, ecx, _ := cpuid(0x80000005, 0)
		return int(ecx >> 24)
	}
	return 0
}
