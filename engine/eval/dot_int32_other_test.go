//go:build !(goexperiment.simd && amd64)

package eval

func i32TestLanes() []int { return []int{0} }

func setI32Lanes(int) func() { return func() {} }
