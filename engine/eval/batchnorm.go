package eval

import (
	"fmt"
	"math"

	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// The batch-norm opcodes. XLA:CPU never sees them (its BatchNormExpander
// rewrites them into elementwise ops and reductions first), so their values
// are those of the expanded formulas. We evaluate the formulas in float64 and
// round once per result: within rounding of the expansion, not bit-exact
// with its op-by-op f32 rounding.

func init() {
	Register("batch-norm-inference", evalBatchNormInference)
	Register("batch-norm-training", evalBatchNormTraining)
	Register("batch-norm-grad", evalBatchNormGrad)
}

// featureLayout describes how a feature dimension splits an operand: every
// element i belongs to feature (i / inner) % features.
type featureLayout struct {
	features, inner int64
	count           float64 // elements per feature
}

func newFeatureLayout(x *tensor.Tensor, featureIndex int64) (featureLayout, error) {
	if featureIndex < 0 || featureIndex >= int64(len(x.Dims)) {
		return featureLayout{}, fmt.Errorf("feature_index %d out of range for %v", featureIndex, x)
	}
	l := featureLayout{features: x.Dims[featureIndex], inner: 1}
	for _, d := range x.Dims[featureIndex+1:] {
		l.inner *= d
	}
	if l.features > 0 {
		l.count = float64(x.NumElements() / l.features)
	}
	return l, nil
}

func (l featureLayout) feature(i int) int { return int((int64(i) / l.inner) % l.features) }

// checkPerFeature verifies that each tensor is a vector of one value per feature.
func (l featureLayout) checkPerFeature(names []string, ts ...*tensor.Tensor) error {
	for i, t := range ts {
		if len(t.Dims) != 1 || t.Dims[0] != l.features {
			return fmt.Errorf("%s must be a vector of %d features, got %v", names[i], l.features, t)
		}
	}
	return nil
}

// moments returns each feature's mean and biased variance of x.
func (l featureLayout) moments(x []float64) (mean, variance []float64) {
	mean, variance = make([]float64, l.features), make([]float64, l.features)
	for i, v := range x {
		mean[l.feature(i)] += v
	}
	for f := range mean {
		mean[f] /= l.count
	}
	for i, v := range x {
		d := v - mean[l.feature(i)]
		variance[l.feature(i)] += d * d
	}
	for f := range variance {
		variance[f] /= l.count
	}
	return mean, variance
}

// normalize returns (x - mean) * rsqrt(variance + eps) * scale + offset.
func (l featureLayout) normalize(x, scale, offset, mean, variance []float64, eps float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		f := l.feature(i)
		out[i] = (v-mean[f])/math.Sqrt(variance[f]+eps)*scale[f] + offset[f]
	}
	return out
}

// batchNormOperands checks a batch-norm op's operands: the array operand,
// then one per-feature vector for each name in perFeature, then, with
// trailing, that many further operands checked by the caller.
func batchNormOperands(in *hlo.Instruction, args []Value, perFeature []string, trailing int) ([]*tensor.Tensor, featureLayout, error) {
	ts, err := arrayArgs(args, 1+len(perFeature)+trailing)
	if err != nil {
		return nil, featureLayout{}, err
	}
	l, err := newFeatureLayout(ts[0], in.FeatureIndex)
	if err != nil {
		return nil, featureLayout{}, err
	}
	if err := l.checkPerFeature(perFeature, ts[1:1+len(perFeature)]...); err != nil {
		return nil, featureLayout{}, err
	}
	return ts, l, nil
}

func evalBatchNormInference(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, l, err := batchNormOperands(in, args, []string{"scale", "offset", "mean", "variance"}, 0)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	out := l.normalize(toF64s(x), toF64s(ts[1]), toF64s(ts[2]), toF64s(ts[3]), toF64s(ts[4]), float64(in.Epsilon))
	return ArrayValue(fromF64s(x.Type, x.Dims, out)), nil
}

func evalBatchNormTraining(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, l, err := batchNormOperands(in, args, []string{"scale", "offset"}, 0)
	if err != nil {
		return Value{}, err
	}
	x := ts[0]
	xs := toF64s(x)
	mean, variance := l.moments(xs)
	out := l.normalize(xs, toF64s(ts[1]), toF64s(ts[2]), mean, variance, float64(in.Epsilon))
	perFeature := []int64{l.features}
	return TupleValue(
		ArrayValue(fromF64s(x.Type, x.Dims, out)),
		ArrayValue(fromF64s(x.Type, perFeature, mean)),
		ArrayValue(fromF64s(x.Type, perFeature, variance)),
	), nil
}

// evalBatchNormGrad computes (grad_operand, grad_scale, grad_offset) of
// batch-norm-training given the saved mean and variance:
//
//	grad_offset  = Σ dy
//	grad_scale   = Σ dy·(x−μ) · rsqrt(σ²+ε)
//	grad_operand = scale·rsqrt(σ²+ε)/N · (N·dy − Σ dy − (x−μ)·Σ dy·(x−μ)/(σ²+ε))
func evalBatchNormGrad(_ *Evaluator, in *hlo.Instruction, args []Value) (Value, error) {
	ts, l, err := batchNormOperands(in, args, []string{"scale", "mean", "variance"}, 1)
	if err != nil {
		return Value{}, err
	}
	x, dyT := ts[0], ts[4]
	if !equalDims(dyT.Dims, x.Dims) {
		return Value{}, fmt.Errorf("grad_output %v does not match operand %v", dyT, x)
	}
	xs, scale, mean, variance, dy := toF64s(x), toF64s(ts[1]), toF64s(ts[2]), toF64s(ts[3]), toF64s(dyT)
	eps := float64(in.Epsilon)
	sumDy, sumDyXc := make([]float64, l.features), make([]float64, l.features)
	for i, g := range dy {
		f := l.feature(i)
		sumDy[f] += g
		sumDyXc[f] += g * (xs[i] - mean[f])
	}
	gradX := make([]float64, len(xs))
	for i, g := range dy {
		f := l.feature(i)
		inv := 1 / math.Sqrt(variance[f]+eps)
		gradX[i] = scale[f] * inv / l.count * (l.count*g - sumDy[f] - (xs[i]-mean[f])*sumDyXc[f]/(variance[f]+eps))
	}
	gradScale := make([]float64, l.features)
	for f := range gradScale {
		gradScale[f] = sumDyXc[f] / math.Sqrt(variance[f]+eps)
	}
	perFeature := []int64{l.features}
	return TupleValue(
		ArrayValue(fromF64s(x.Type, x.Dims, gradX)),
		ArrayValue(fromF64s(x.Type, perFeature, gradScale)),
		ArrayValue(fromF64s(x.Type, perFeature, sumDy)),
	), nil
}
