package eval

import "sync"

// ynnPlanKey is what ynnPlanF32's plan depends on.
type ynnPlanKey struct {
	m, n, k       int
	avx512, packB bool
}

// ynnPlans holds the plans made (a loop body's dots ask for the same plan
// every step; making one builds the kernel table and prices every kernel).
var ynnPlans sync.Map // ynnPlanKey -> []ynnTask

// ynnPlanF32Kept is ynnPlanF32, each plan made once. Plans are read only.
func ynnPlanF32Kept(m, n, k int, avx512, packB bool) []ynnTask {
	key := ynnPlanKey{m, n, k, avx512, packB}
	if t, ok := ynnPlans.Load(key); ok {
		return t.([]ynnTask)
	}
	t := ynnPlanF32(m, n, k, avx512, packB)
	ynnPlans.Store(key, t)
	return t
}
