package ir

import (
	"fmt"
	"sort"
	"strings"

	"goldtrace/kernel/ir/irpb"
)

// capacity checks that the SBUF and PSUM tensors live at the same time fit
// in a partition. A tensor is live from its first to its last access in
// program order; when those lie on different sides of a loop boundary (a
// tensor written before a loop and read inside it, or accumulated across its
// iterations and read after) it is live for the whole loop. Sizes are exact
// bytes per partition, with no alignment padding: the check only rejects
// kernels that cannot fit however they are placed.
func (v *validator) capacity() {
	type live struct {
		t           *irpb.Tensor
		first, last int
		bytes       int64
	}
	var sbuf, psum []live
	for id, s := range v.uses { // in tensor id order
		if s.first < 0 {
			continue // never accessed
		}
		t := v.tensor(int32(id))
		c := capacityOf(t.Memory)
		if c == 0 {
			continue // not on chip
		}
		b := partitionBytes(t)
		if b > c {
			continue // already reported on its own
		}
		first, last := s.first, s.last
		for changed := true; changed; {
			changed = false
			for _, l := range v.loops {
				inF := l.first <= first && first <= l.last
				inL := l.first <= last && last <= l.last
				if inF != inL && (first > l.first || last < l.last) {
					first, last = min(first, l.first), max(last, l.last)
					changed = true
				}
			}
		}
		if t.Memory == irpb.Memory_SBUF {
			sbuf = append(sbuf, live{t, first, last, b})
		} else {
			psum = append(psum, live{t, first, last, b})
		}
	}
	for _, m := range []irpb.Memory{irpb.Memory_SBUF, irpb.Memory_PSUM} {
		lives, limit := sbuf, int64(SBUFPartitionBytes)
		if m == irpb.Memory_PSUM {
			lives, limit = psum, PSUMPartitionBytes
		}
		if len(lives) == 0 {
			continue
		}
		delta := make([]int64, v.pos+1)
		for _, l := range lives {
			delta[l.first] = satAdd(delta[l.first], l.bytes)
			delta[l.last+1] -= l.bytes
		}
		sum := int64(0)
		for p := 0; p < v.pos; p++ {
			sum += delta[p]
			if sum <= limit {
				continue
			}
			var at []live
			for _, l := range lives {
				if l.first <= p && p <= l.last {
					at = append(at, l)
				}
			}
			sort.SliceStable(at, func(i, j int) bool { return at[i].bytes > at[j].bytes })
			var parts []string
			for i, l := range at {
				if i == 4 {
					parts = append(parts, fmt.Sprintf("and %d more", len(at)-4))
					break
				}
				parts = append(parts, fmt.Sprintf("%s %d", tensorLabel(l.t), l.bytes))
			}
			v.errf(capacityRule(m), v.instLocs[p], "", "the %s tensors live here need %d bytes per partition (%s), more than the %d (%d KiB) a partition holds",
				memoryName(m), sum, strings.Join(parts, ", "), limit, limit/1024)
			break
		}
	}
}

// capacityOf is the bytes per partition of on-chip memory m (0: not on chip).
func capacityOf(m irpb.Memory) int64 {
	switch m {
	case irpb.Memory_SBUF:
		return SBUFPartitionBytes
	case irpb.Memory_PSUM:
		return PSUMPartitionBytes
	}
	return 0
}

// capacityRule names the capacity rule of on-chip memory m.
func capacityRule(m irpb.Memory) string {
	if m == irpb.Memory_PSUM {
		return "psum-capacity"
	}
	return "sbuf-capacity"
}
