package golden

import (
	"goldtrace/engine/dtype"
	"goldtrace/engine/eval"
	"goldtrace/engine/hlo"
)

// ynnReduceWindow rewrites an f32 or f64 add reduce-window inside a YNNPACK
// fusion whose windows do not overlap (each windowed dim's stride its
// size, no dilation) into the reduce YNNPACK runs for it: the operand
// padded with the init value (and cropped to whole windows), reshaped so
// each windowed dim d becomes [out_d, size_d], and summed over the size
// dims. The evaluator then sums it in YNNPACK's order for that reduce
// (reduce_ynn_general.go): a 2x2 average pool adds each window's two rows'
// pairs first, (a00+a01)+(a10+a11), where the window-order fold added the
// four in sequence (measured on jax 0.10.2: 27.7% of an [8,112,112,64]
// pool's results differed). Max and min pools are left as they are: with
// NaNs their results follow YNNPACK's row-then-window MAXPS order, not
// modelled (a NaN's window row is dropped). f64 pools take YNNPACK's f64
// sum the same way (measured: a 2x2 average pool of f64[8,56,56,64]
// differed on 30% of results before).
func (r *xlaRewriter) ynnReduceWindow(in *hlo.Instruction) (*hlo.Instruction, error) {
	f := r.ynn.member[in]
	if f == nil || in.Opcode != "reduce-window" || len(in.Operands) != 2 || !in.Shape.IsArray() ||
		in.Shape.Elem != dtype.F32 && in.Shape.Elem != dtype.F64 {
		return nil, nil
	}
	x, init := in.Operands[0], in.Operands[1]
	et := in.Shape.Elem
	if !x.Shape.IsArray() || x.Shape.Elem != et || len(in.Window) != len(x.Shape.Dims) ||
		len(in.Shape.Dims) != len(x.Shape.Dims) || in.ToApply() == nil || eval.FastReducer(in.ToApply()) != "add" {
		return nil, nil
	}
	pad := make([]hlo.PadDim, len(in.Window))
	padded := false
	var dims, reduced []int64
	for d, w := range in.Window {
		if w.Size < 1 || w.Stride != w.Size || w.BaseDilation > 1 || w.WindowDilation > 1 || w.WindowReversal {
			return nil, nil
		}
		out := in.Shape.Dims[d]
		// Padding beyond the last whole window is cropped off.
		high := w.PadHigh - (w.PadLow + x.Shape.Dims[d] + w.PadHigh - out*w.Size)
		pad[d] = hlo.PadDim{Low: w.PadLow, High: high}
		padded = padded || w.PadLow != 0 || high != 0
		dims = append(dims, out)
		if w.Size > 1 {
			dims = append(dims, w.Size)
			reduced = append(reduced, int64(len(dims)-1))
		}
	}
	if len(reduced) == 0 {
		return nil, nil
	}
	src := x
	if padded {
		ps := hlo.Shape{Elem: et}
		for d, p := range pad {
			ps.Dims = append(ps.Dims, p.Low+x.Shape.Dims[d]+p.High)
		}
		src = r.emit("pad", ps, x, init)
		src.Padding = pad
		r.ynn.member[src] = f
	}
	rs := r.emit("reshape", hlo.Shape{Elem: et, Dims: dims}, src)
	r.ynn.member[rs] = f
	red := r.emit("reduce", hlo.Shape{Elem: et, Dims: in.Shape.Dims}, rs, init)
	red.Dimensions = reduced
	red.Called = in.Called
	red.FrontendAttrs = in.FrontendAttrs
	r.ynn.member[red] = f
	return red, nil
}
