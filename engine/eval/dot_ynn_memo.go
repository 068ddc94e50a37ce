package eval

import "sync"

// ynnPlanKey is what ynnPlanF32's or ynnPlanF64's plan depends on.
type ynnPlanKey struct {
	m, n, k       int
	avx512, packB bool
	f64           bool
}

// ynnPlans holds the plans made (a loop body's dots ask for the same plan
// every step; making one builds the kernel table and prices every kernel).
var ynnPlans sync.Map // ynnPlanKey -> []ynnTask

// ynnPlanF32Kept is ynnPlanF32, each plan made once. Plans are read only.
func ynnPlanF32Kept(m, n, k int, avx512, packB bool) []ynnTask {
	return ynnPlanKept(ynnPlanKey{m, n, k, avx512, packB, false})
}

// ynnPlanF64Kept is ynnPlanF64, each plan made once.
func ynnPlanF64Kept(m, n, k int, avx512, packB bool) []ynnTask {
	return ynnPlanKept(ynnPlanKey{m, n, k, avx512, packB, true})
}

func ynnPlanKept(key ynnPlanKey) []ynnTask {
	if t, ok := ynnPlans.Load(key); ok {
		return t.([]ynnTask)
	}
	plan := ynnPlanF32
	if key.f64 {
		plan = ynnPlanF64
	}
	t := plan(key.m, key.n, key.k, key.avx512, key.packB)
	ynnPlans.Store(key, t)
	return t
}
