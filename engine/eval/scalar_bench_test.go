package eval

import (
	"math/rand"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

// jnpSortHLO is jax.jit(jnp.sort).lower(x).as_text(dialect="hlo") for
// x: f32[64,1024]: the comparator canonicalizes NaN and -0 before a
// TOTALORDER compare, so it is no simple compare of two parameters.
const jnpSortHLO = `HloModule jit_sort, entry_computation_layout={(f32[64,1024]{1,0})->f32[64,1024]{1,0}}

region_0.1 {
  sort.2 = f32[] parameter(0)
  ne.2 = pred[] compare(sort.2, sort.2), direction=NE
  constant.2 = f32[] constant(nan)
  constant.3 = f32[] constant(0)
  eq.2 = pred[] compare(sort.2, constant.3), direction=EQ
  select_n.4 = f32[] select(eq.2, constant.3, sort.2)
  select_n.5 = f32[] select(ne.2, constant.2, select_n.4)
  sort.3 = f32[] parameter(1)
  ne.3 = pred[] compare(sort.3, sort.3), direction=NE
  eq.3 = pred[] compare(sort.3, constant.3), direction=EQ
  select_n.6 = f32[] select(eq.3, constant.3, sort.3)
  select_n.7 = f32[] select(ne.3, constant.2, select_n.6)
  ROOT lt_to.1 = pred[] compare(select_n.5, select_n.7), direction=LT, type=TOTALORDER
}

ENTRY main.3 {
  x.1 = f32[64,1024]{1,0} parameter(0)
  ROOT sort.5 = f32[64,1024]{1,0} sort(x.1), dimensions={1}, is_stable=true, to_apply=region_0.1
}
`

// argmaxHLO is jax.jit(lambda x: jnp.argmax(x, axis=-1)) for f32[64,1024]:
// a variadic (value, index) reduce.
const argmaxHLO = `HloModule jit_argmax, entry_computation_layout={(f32[64,1024]{1,0})->s32[64]{0}}

region_0.1 {
  reduce.4 = f32[] parameter(0)
  reduce.6 = f32[] parameter(2)
  gt.1 = pred[] compare(reduce.4, reduce.6), direction=GT
  ne.1 = pred[] compare(reduce.4, reduce.4), direction=NE
  or.2 = pred[] or(gt.1, ne.1)
  select_n.2 = f32[] select(or.2, reduce.4, reduce.6)
  eq.1 = pred[] compare(reduce.4, reduce.6), direction=EQ
  reduce.5 = s32[] parameter(1)
  reduce.7 = s32[] parameter(3)
  lt.1 = pred[] compare(reduce.5, reduce.7), direction=LT
  and.1 = pred[] and(eq.1, lt.1)
  or.3 = pred[] or(or.2, and.1)
  select_n.3 = s32[] select(or.3, reduce.5, reduce.7)
  ROOT tuple.1 = (f32[], s32[]) tuple(select_n.2, select_n.3)
}

ENTRY main.3 {
  x.1 = f32[64,1024]{1,0} parameter(0)
  iota.2 = s32[1024]{0} iota(), iota_dimension=0
  iota.3 = s32[64,1024]{1,0} broadcast(iota.2), dimensions={1}
  constant.3 = f32[] constant(-inf)
  constant.2 = s32[] constant(0)
  reduce.11 = (f32[64]{0}, s32[64]{0}) reduce(x.1, iota.3, constant.3, constant.2), dimensions={1}, to_apply=region_0.1
  ROOT reduce.13 = s32[64]{0} get-tuple-element(reduce.11), index=1
}
`

// elementwiseHLO is the bench program tanh(x)*sigmoid(x)+exp(-x*x)+log1p(|x|)
// over f32[1024,1024], as jax lowers it (unfused).
const elementwiseHLO = `HloModule jit_elementwise, entry_computation_layout={(f32[1024,1024]{1,0})->f32[1024,1024]{1,0}}

ENTRY main.1 {
  x.1 = f32[1024,1024]{1,0} parameter(0)
  tanh.1 = f32[1024,1024]{1,0} tanh(x.1)
  constant.1 = f32[] constant(1)
  broadcast.1 = f32[1024,1024]{1,0} broadcast(constant.1), dimensions={}
  neg.2 = f32[1024,1024]{1,0} negate(x.1)
  exp.2 = f32[1024,1024]{1,0} exponential(neg.2)
  add.3 = f32[1024,1024]{1,0} add(exp.2, broadcast.1)
  div.1 = f32[1024,1024]{1,0} divide(broadcast.1, add.3)
  mul.2 = f32[1024,1024]{1,0} multiply(tanh.1, div.1)
  neg.3 = f32[1024,1024]{1,0} negate(x.1)
  mul.3 = f32[1024,1024]{1,0} multiply(neg.3, x.1)
  exp.3 = f32[1024,1024]{1,0} exponential(mul.3)
  add.4 = f32[1024,1024]{1,0} add(mul.2, exp.3)
  abs.1 = f32[1024,1024]{1,0} abs(x.1)
  log1p.1 = f32[1024,1024]{1,0} log-plus-one(abs.1)
  ROOT add.5 = f32[1024,1024]{1,0} add(add.4, log1p.1)
}
`

func benchModule(b *testing.B, src string, dims ...int64) {
	m, err := hlo.ParseText([]byte(src), "bench.hlo")
	if err != nil {
		b.Fatal(err)
	}
	x := tensor.New(dtype.F32, dims)
	r := rand.New(rand.NewSource(1))
	for i := range x.F32() {
		x.F32()[i] = float32(r.NormFloat64())
	}
	args := []Value{ArrayValue(x)}
	b.ResetTimer()
	for range b.N {
		if _, err := Evaluate(m, args, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSortJnp sorts f32[64,1024] rows with jnp.sort's comparator.
func BenchmarkSortJnp(b *testing.B) { benchBoth(b, jnpSortHLO, 64, 1024) }

// BenchmarkArgmaxReduce is a variadic (value, index) reduce of f32[64,1024].
func BenchmarkArgmaxReduce(b *testing.B) { benchBoth(b, argmaxHLO, 64, 1024) }

// BenchmarkElementwiseF32 is the elementwise bench program on f32[1024,1024].
func BenchmarkElementwiseF32(b *testing.B) { benchModule(b, elementwiseHLO, 1024, 1024) }

// benchBoth runs a benchmark with scalar programs and, as the baseline, with
// the interpreter path.
func benchBoth(b *testing.B, src string, dims ...int64) {
	b.Run("compiled", func(b *testing.B) { benchModule(b, src, dims...) })
	b.Run("interpreted", func(b *testing.B) {
		scalarOff = true
		defer func() { scalarOff = false }()
		benchModule(b, src, dims...)
	})
}
