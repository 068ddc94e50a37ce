package eval

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// convTabRef is planConv's window table as it was built before fillTab: one
// walk over every (output position, window element), dim by dim.
func convTabRef(window []hlo.WindowDim, inS, winS, outS []int64) (tab []int64, live []bool) {
	ns := len(inS)
	p, w := tensor.NumElements(outS), tensor.NumElements(winS)
	tab = make([]int64, p*w)
	for _, wd := range window {
		if wd.BaseDilation > 1 {
			live = make([]bool, p*w)
		}
	}
	inStr := tensor.Strides(inS)
	pi := 0
	walkIndex(outS, func(_ int64, op []int64) {
		walkIndex(winS, func(wl int64, wi []int64) {
			off, lv := int64(0), true
			for s := 0; s < ns; s++ {
				wd := window[s]
				ld, rd := max(wd.BaseDilation, 1), max(wd.WindowDilation, 1)
				k := wi[s]
				if wd.WindowReversal {
					k = winS[s] - 1 - k
				}
				pos := op[s]*wd.Stride - wd.PadLow + k*rd
				if pos%ld != 0 {
					lv = false
				}
				if off >= 0 && (pos < 0 || pos%ld != 0 || pos/ld >= inS[s]) {
					off = -1
				}
				if off >= 0 {
					off += pos / ld * inStr[s]
				}
			}
			tab[int64(pi)*w+wl] = off
			if live != nil {
				live[int64(pi)*w+wl] = lv
			}
		})
		pi++
	})
	return tab, live
}

// TestConvTabMatchesWalk holds fillTab's table (and live flags) to the
// element-by-element walk it replaced: 1 to 3 spatial dims, padding on
// either side (negative too), strides, window and base dilation, reversal.
func TestConvTabMatchesWalk(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for it := 0; it < 300; it++ {
		ns := 1 + r.Intn(3)
		window := make([]hlo.WindowDim, ns)
		inS, winS, outS := make([]int64, ns), make([]int64, ns), make([]int64, ns)
		for s := range window {
			wd := hlo.WindowDim{Size: int64(1 + r.Intn(5)), Stride: int64(1 + r.Intn(3)),
				PadLow: int64(r.Intn(5) - 1), PadHigh: int64(r.Intn(5) - 1),
				WindowDilation: int64(1 + r.Intn(2)), BaseDilation: int64(1 + r.Intn(2)),
				WindowReversal: r.Intn(4) == 0}
			window[s] = wd
			inS[s], winS[s] = int64(1+r.Intn(9)), wd.Size
			outS[s] = int64(1 + r.Intn(8))
		}
		want, wantLive := convTabRef(window, inS, winS, outS)
		p := &convPlan{p: int(tensor.NumElements(outS)), w: int(tensor.NumElements(winS))}
		p.tab = make([]int64, p.p*p.w)
		if wantLive != nil {
			p.live = make([]bool, p.p*p.w)
		}
		p.fillTab(window, inS, winS, outS)
		name := fmt.Sprintf("in %v win %v out %v %+v", inS, winS, outS, window)
		if !slices.Equal(p.tab, want) {
			t.Fatalf("%s: table differs\n got %v\nwant %v", name, p.tab, want)
		}
		if !slices.Equal(p.live, wantLive) {
			t.Fatalf("%s: live flags differ", name)
		}
	}
}
