//go:build !goexperiment.simd || !amd64

package eval

func fftLanes() int { return 4 }

func fftPassSIMD(w int, st *fftStage, x, y []float64) bool { return false }

func fftRealPostSIMD(w, h int, z, out, rt []float64) bool { return false }

func fftRealPreSIMD(w, h int, x, out, rt []float64) bool { return false }

func fftPairsInSIMD(w int, src []float32, off, rowF, npos int, conj bool, a []float64) int { return 0 }

func fftPairsOutSIMD(w int, res []float64, npos int, scale bool, sr, si float64, dst []float32, off, rowF int) int {
	return 0
}

func fftColsInSIMD(w int, buf []complex128, base, stride, n int, conj bool, a []float64) bool {
	return false
}

func fftColsOutSIMD(w int, res []float64, n int, scale bool, sr, si float64, buf []complex128, o64 []float32, base, stride int) bool {
	return false
}

func fftRowsOutC128SIMD(w int, res []float64, npos int, scale bool, sr, si float64, dst []complex128, off, rowC int) int {
	return 0
}
