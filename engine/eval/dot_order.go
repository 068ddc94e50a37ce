package eval

// XLA:CPU (jaxlib 0.10.2) does not hand matrix-vector dots to a library: its
// dot emitter writes tiled GEMV loops itself (row_major_gemv /
// col_major_gemv, tile 8 rows × 8 lanes), and LLVM contracts their
// multiply-adds into FMA. Their summation order, read from the emitted IR and
// confirmed bit-exact against jax, is:
//
//   - K contiguous in the matrix (row_major_gemv, e.g. A[M,K]·v): each output
//     keeps 8 lane accumulators, lane l summing k ≡ l (mod 8) over the first
//     K−K%8 terms by FMA; the lanes are then added pairwise — for rows in the
//     full tiles of 8 as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), for the last
//     M%8 rows as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) — and a separate FMA
//     chain over the K%8 tail terms is added last.
//   - K strided in the matrix (col_major_gemv, e.g. v·B[K,N]): each output in
//     the full tiles of 8 is one FMA chain over k in order, vectorised across
//     outputs. Only outputs counts that are multiples of 8 take this path.
//
// Matrix-matrix dots go to YNNPACK (a __ynn_fusion), whose order we do not
// reproduce; they stay on the packed GEMM.

// gemvTile is the emitter's row tile and vector width.
const gemvTile = 8

// gemvOrdered computes a f32 dot that is a batch of matrix-vector products in
// XLA:CPU's order, returning false when the shape is not one. a and b are the operands viewed by asMatrices.
func gemvOrdered(p *dotPlan, a []float32, la gemmLayout, b []float32, lb gemmLayout) ([]float32, bool) {
	if p.k == 0 || (p.m == 1) == (p.n == 1) {
		return nil, false
	}
	g := gemv{nb: p.b, rows: p.m, k: p.k, mat: a, vec: b,
		mb: la.bs, mi: la.rs, mk: la.cs, vb: lb.bs, vk: lb.rs}
	if p.m == 1 {
		g = gemv{nb: p.b, rows: p.n, k: p.k, mat: b, vec: a,
			mb: lb.bs, mi: lb.cs, mk: lb.rs, vb: la.bs, vk: la.cs}
	}
	if g.mk != 1 && g.rows%gemvTile != 0 {
		// col_major_gemv's scalar columns past the last tile of 8 did not
		// match an in-order FMA chain for every K (e.g. K=5, 2 columns are
		// off by an ulp); their order is not pinned down yet.
		return nil, false
	}
	out := make([]float32, p.b*g.rows)
	if g.mk == 1 {
		g.rowMajor(out)
	} else {
		g.colMajor(out)
	}
	return out, true
}

// gemv is out[b,i] = Σ_k mat[b,i,k]·vec[b,k] with element (b,i,k) of mat at
// b*mb + i*mi + k*mk and element (b,k) of vec at b*vb + k*vk.
type gemv struct {
	nb, rows, k int
	mat, vec    []float32
	mb, mi, mk  int
	vb, vk      int
}

// vector returns batch b's vector as a contiguous slice.
func (g *gemv) vector(b int, buf []float32) []float32 {
	if g.vk == 1 {
		return g.vec[b*g.vb : b*g.vb+g.k]
	}
	for k := range buf {
		buf[k] = g.vec[b*g.vb+k*g.vk]
	}
	return buf
}

// rowMajor is row_major_gemv's order (the matrix has unit k stride).
func (g *gemv) rowMajor(out []float32) {
	buf := make([]float32, g.k)
	k8 := g.k - g.k%gemvTile
	fullRows := g.rows - g.rows%gemvTile
	for b := 0; b < g.nb; b++ {
		v := g.vector(b, buf)
		for i := 0; i < g.rows; i++ {
			row := g.mat[b*g.mb+i*g.mi : b*g.mb+i*g.mi+g.k]
			var acc [gemvTile]float32
			for k := 0; k < k8; k += gemvTile {
				fma8((*[8]float32)(row[k:]), (*[8]float32)(v[k:]), &acc)
			}
			var sum float32
			if i < fullRows {
				sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
			} else {
				sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
			}
			var tail float32
			for k := k8; k < g.k; k++ {
				tail = fma32(row[k], v[k], tail)
			}
			out[b*g.rows+i] = sum + tail
		}
	}
}

// colMajor is col_major_gemv's order: one FMA chain over k per output, the
// outputs past the last full tile of 8 starting from the rounded first
// product.
func (g *gemv) colMajor(out []float32) {
	buf := make([]float32, g.k)
	full := g.rows - g.rows%gemvTile
	col := make([]float32, g.rows)
	for b := 0; b < g.nb; b++ {
		v := g.vector(b, buf)
		acc := out[b*g.rows : (b+1)*g.rows]
		for k := 0; k < g.k; k++ {
			base := b*g.mb + k*g.mk
			src := col
			if g.mi == 1 {
				src = g.mat[base : base+g.rows]
			} else {
				for i := range col {
					col[i] = g.mat[base+i*g.mi]
				}
			}
			for i := 0; i < full; i += gemvTile {
				fmaBroadcast8(v[k], (*[8]float32)(src[i:]), (*[8]float32)(acc[i:]))
			}
			for i := full; i < g.rows; i++ {
				if k == 0 {
					acc[i] = v[k] * src[i]
				} else {
					acc[i] = fma32(v[k], src[i], acc[i])
				}
			}
		}
	}
}

// fma8Portable is fma8 on the exact scalar fma32 (xlamath.go).
func fma8Portable(a, b, acc *[8]float32) {
	for l := range acc {
		acc[l] = fma32(a[l], b[l], acc[l])
	}
}

// fmaBroadcast8Portable is fmaBroadcast8 on fma32.
func fmaBroadcast8Portable(x float32, b, acc *[8]float32) {
	for l := range acc {
		acc[l] = fma32(x, b[l], acc[l])
	}
}
