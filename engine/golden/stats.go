package golden

import (
	"fmt"
	"math"

	"goldtrace/engine/dtype"
	"goldtrace/engine/tensor"
)

// Stats summarizes a tensor for the -v 1 report. NaNs are counted, not
// folded into min/max/mean.
type Stats struct {
	Min, Max, Mean float64
	NaN            int64
	Count          int64 // elements that are not NaN
}

// TensorStats computes Stats over a real (non-complex) tensor; ok is false
// for complex tensors.
func TensorStats(t *tensor.Tensor) (s Stats, ok bool) {
	if t.Type.IsComplex() || !t.Type.IsArray() {
		return s, false
	}
	f, err := castTensor(t, dtype.F64)
	if err != nil {
		return s, false
	}
	s.Min, s.Max = math.Inf(1), math.Inf(-1)
	var sum float64
	for _, v := range f.F64() {
		if math.IsNaN(v) {
			s.NaN++
			continue
		}
		s.Count++
		s.Min, s.Max = math.Min(s.Min, v), math.Max(s.Max, v)
		sum += v
	}
	if s.Count > 0 {
		s.Mean = sum / float64(s.Count)
	} else {
		s.Min, s.Max, s.Mean = math.NaN(), math.NaN(), math.NaN()
	}
	return s, true
}

// describe is one summary line: "f32[2,3] min=-1 max=2 mean=0.25".
func describe(t *tensor.Tensor) string {
	s, ok := TensorStats(t)
	if !ok {
		return shapeString(t)
	}
	line := fmt.Sprintf("%s min=%.6g max=%.6g mean=%.6g", shapeString(t), s.Min, s.Max, s.Mean)
	if s.NaN > 0 {
		line += fmt.Sprintf(" nan=%d", s.NaN)
	}
	return line
}
