package eval

import (
	"os"
	"runtime"
	"sync/atomic"
)

// pipelined runs one product on par goroutines with no barrier inside it.
// B is cut into column blocks nc wide, each packed whole (every kc slice,
// as packWhole lays them out) into one of a few rotating buffers; C's rows
// are cut into chunks. One queue of tasks, taken in order from a shared
// counter, packs runs of each block's panels and multiplies each row chunk
// by a packed block, the chunk's kc slices in order, so each element of C
// takes exactly the kc-slice chains, added in slice order, that shared
// gives it. The packing of block J+1 is queued before the chunks of block
// J, so a chunk rarely finds its block unpacked; a goroutine that does
// waits for the packers, as one that is to pack into a buffer still in use
// waits for the chunks using it (every task waits only on tasks queued
// before it, which some goroutine holds). shared ends every kc slice at a
// barrier, where the goroutines wait for the slowest chunk and a parked
// goroutine must be woken again: 16 of them in a 2048³ product in
// YNNPACK's K blocks. tile, when set, is called on each chunk's columns of
// a block once its last slice is done (runOverTiles).
func (kn *gemmKernel[T]) pipelined(ov bool, par, m, n, k int, a []T, la gemmLayout, b []T, lb gemmLayout, c []T, tile func(r0, r1, c0, c1 int)) {
	mr, nr := kn.mr, kn.nr
	nc := kn.pipelineNC(n, k)
	ncp := roundUp(nc, nr)
	blocks := (n + nc - 1) / nc
	// Row chunks of about pipelineRows rows (a multiple of mr, the last
	// one may be ragged), at least a few per goroutine.
	rowTiles := (m + mr - 1) / mr
	chunks := min(rowTiles, max(4*par/blocks+1, (m+pipelineRows-1)/pipelineRows))
	if chunks > par && chunks < rowTiles {
		chunks = min(roundUp(chunks, par), rowTiles)
	}
	rowBound := func(i int) int { return min(i*rowTiles/chunks*mr, m) }
	// Packing tasks: each kc slice of a block in runs of panels of about
	// pipelinePack elements, so that no goroutine waits long for one.
	slices := (k + kn.kc - 1) / kn.kc
	split := max(1, min(ncp/nr, min(k, kn.kc)*ncp/pipelinePack))
	packs := slices * split
	const nbuf = 3
	size := k * ncp
	w0 := kn.work()
	defer kn.pool.Put(w0)
	w0.pipe = growScratch(w0.pipe, nbuf*size)

	// The queue: P0 P1 C0 P2 C1 ... P(last) C(last-1) C(last), where Pj
	// packs block j and Cj multiplies its row chunks.
	type task struct{ block, item int32 }
	tasks := make([]task, 0, blocks*(packs+chunks))
	addPacks := func(j int) {
		for s := range packs {
			tasks = append(tasks, task{int32(j), int32(-1 - s)})
		}
	}
	addPacks(0)
	for j := range blocks {
		if j+1 < blocks {
			addPacks(j + 1)
		}
		for i := range chunks {
			tasks = append(tasks, task{int32(j), int32(i)})
		}
	}
	packed := newPipeCounters(blocks, packs) // packing tasks done per block
	done := newPipeCounters(blocks, chunks)  // chunks done per block
	kn.parallelFor(par, len(tasks), func(w *gemmWork[T], it int) {
		t := tasks[it]
		j := int(t.block)
		jc := j * nc
		cols := min(nc, n-jc)
		buf := w0.pipe[j%nbuf*size:][:size]
		if t.item < 0 {
			if j >= nbuf {
				done[j-nbuf].wait()
			}
			s, part := int(-1-t.item)/split, int(-1-t.item)%split
			pc := s * kn.kc
			kc := min(kn.kc, k-pc)
			panels := (cols + nr - 1) / nr
			lo, hi := part*panels/split, (part+1)*panels/split
			if lo < hi {
				packB(buf[pc*ncp+lo*nr*kc:], nr, b, lb, pc, kc, jc+lo*nr, min(hi*nr, cols)-lo*nr)
			}
			packed[j].add()
			return
		}
		packed[j].wait()
		r0, r1 := rowBound(int(t.item)), rowBound(int(t.item)+1)
		for pc := 0; pc < k; pc += kn.kc {
			kc := min(kn.kc, k-pc)
			ap := w.packedA(mr, r1-r0, kc)
			kn.firstKernel(ov, pc).blockA(ap, a, la, r0, r1-r0, pc, kc, buf[pc*ncp:], w.tile, c[r0*n+jc:], n, cols)
		}
		done[j].add()
		if tile != nil && r1 > r0 {
			tile(r0, r1, jc, jc+cols)
		}
	})
}

// pipelined's blocking: a packed block of B (all of K by nc columns) holds
// at most pipelineMaxB elements (2 MiB of f32: with k = 2048, 256 columns,
// whose 512-deep slices of 512 KiB fit in L2 beside a chunk's slice of A);
// row chunks are about pipelineRows rows (of a 2-core EPYC's CPU time, 64
// rows and 2 MiB blocks gave a 2048³ product in 512-deep slices what
// shared gives it; 192 rows or 8 MiB blocks 3-8% less); packing tasks
// about pipelinePack elements.
var pipelineMaxB = 1 << 19

const (
	pipelineRows = 64
	pipelinePack = 1 << 16
)

// gemmPipelined says whether products shared among goroutines run
// pipelined (where pipelineNC allows) or shared
// (GOLDTRACE_GEMM_BARRIERS=1, to compare).
var gemmPipelined = os.Getenv("GOLDTRACE_GEMM_BARRIERS") != "1"

// pipelineNC is the width of pipelined's blocks of B: as wide as kn.nc
// while the block (k×nc) holds at most pipelineMaxB elements, at least
// one panel; 0 when even one panel is too deep.
func (kn *gemmKernel[T]) pipelineNC(n, k int) int {
	if k*kn.nr > pipelineMaxB {
		return 0
	}
	return min(roundUp(n, kn.nr), kn.nc, max(kn.nr, pipelineMaxB/k/kn.nr*kn.nr))
}

// pipeCounter counts tasks done towards a total; wait returns once all
// are. A waiter spins a little (the task it waits for is usually nearly
// done), then parks until the last task's add wakes it.
type pipeCounter struct {
	n     atomic.Int32
	total int32
	ch    chan struct{}
}

func newPipeCounters(n, total int) []pipeCounter {
	cs := make([]pipeCounter, n)
	for i := range cs {
		cs[i].total = int32(total)
		cs[i].ch = make(chan struct{})
	}
	return cs
}

func (p *pipeCounter) add() {
	if p.n.Add(1) == p.total {
		close(p.ch)
	}
}

func (p *pipeCounter) wait() {
	for range 64 {
		if p.n.Load() == p.total {
			return
		}
		runtime.Gosched()
	}
	<-p.ch
}
