package eval

// dotInF64 is dotIn for an f64 dot XLA:CPU hands to YNNPACK (tasks, from
// ynnRouteF64): every element summed in YNNPACK's order. YNNPACK's f64
// kernels are all tile_k 1, so a task is an FMA chain from zero over each
// K block, the blocks added in order: the f64 GEMM with its kc slices set to
// the blocks (withKC) computes exactly that.
func dotInF64(par int, p *dotPlan, ldims, rdims []int64, lhs, rhs []float64, tasks []ynnTask) []float64 {
	a, la := asMatrices(lhs, ldims, p.lhsPerm, p.nBatch, p.nLhsFree, p.m, p.k)
	b, lb := asMatrices(rhs, rdims, p.rhsPerm, p.nBatch, p.nContract, p.k, p.n)
	if p.b == 0 || p.m == 0 || p.n == 0 || p.k == 0 {
		return make([]float64, p.b*p.m*p.n)
	}
	c := storageForWriting[float64](p.b * p.m * p.n) // every element is set
	kn := kernelFor[float64]()
	if ks := uniformChainStep(tasks); ks > 0 {
		kn.withKC(min(ks, p.k)).runOver(par, p.b, p.m, p.n, p.k, a, la, b, lb, c)
		return c
	}
	k := p.k
	ynnEachTask(tasks, p.b, p.m, p.n, a, la, b, lb, c, func(t ynnTask, mi, nj int, av, bv, tmp []float64) {
		if t.fma {
			kn.withKC(min(t.kstep, k)).run(par, p.b, mi, nj, k, av, la, bv, lb, tmp)
		} else {
			ynnMulAdd(p.b, mi, nj, k, t.kstep, av, la, bv, lb, tmp)
		}
	})
	return c
}
