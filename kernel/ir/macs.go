package ir

import (
	"math"

	"goldtrace/kernel/ir/irpb"
)

// MatmulMACs is the number of multiply-accumulates of every matmul
// instruction in k: per instruction M*N*K of its tile (stationary (K, M...),
// moving (K, N...); K the partition size, M and N the products of the free
// sizes), times the trip counts of the loops around it, times the number of
// program instances of the grid. Masks do not reduce the count (the engine
// issues the whole tile). The sum saturates at math.MaxInt64 rather than wrap.
func MatmulMACs(k *irpb.Kernel) int64 {
	if k == nil {
		return 0
	}
	inst := int64(1)
	for _, g := range k.Grid {
		inst = satMul(inst, max(g, 0))
	}
	return macsIn(k.Body, inst)
}

func macsIn(body []*irpb.Stmt, mult int64) int64 {
	var sum int64
	for _, st := range body {
		switch x := st.GetKind().(type) {
		case *irpb.Stmt_Loop:
			if x.Loop == nil {
				continue
			}
			sum = satAdd(sum, macsIn(x.Loop.Body, satMul(mult, tripCount(x.Loop))))
		case *irpb.Stmt_Inst:
			in := x.Inst
			if in.GetOp() != "matmul" || len(in.Src) < 2 || in.Src[0] == nil || in.Src[1] == nil {
				continue
			}
			st, mv := in.Src[0].Shape, in.Src[1].Shape
			if len(st) == 0 || len(mv) == 0 {
				continue
			}
			macs := satMul(satMul(max(st[0], 0), prodFree(st)), prodFree(mv))
			sum = satAdd(sum, satMul(mult, macs))
		}
	}
	return sum
}

func prodFree(shape []int64) int64 {
	p := int64(1)
	for _, n := range shape[1:] {
		p = satMul(p, max(n, 0))
	}
	return p
}

// tripCount is the number of iterations of l (0 when step <= 0 or stop <= start).
func tripCount(l *irpb.Loop) int64 {
	if l.Step <= 0 || l.Stop <= l.Start {
		return 0
	}
	d := uint64(l.Stop) - uint64(l.Start) // exact: stop > start
	n := (d-1)/uint64(l.Step) + 1
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
