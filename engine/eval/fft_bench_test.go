package eval

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"

	"goldtrace/engine/dtype"
	"goldtrace/engine/hlo"
	"goldtrace/engine/tensor"
)

func benchFFT(b *testing.B, src string, typ dtype.Type, dims []int64) {
	m, err := hlo.ParseText([]byte(src), "fft.hlo")
	if err != nil {
		b.Fatal(err)
	}
	x := tensor.New(typ, dims)
	rng := rand.New(rand.NewSource(1))
	switch typ {
	case dtype.F32:
		for i := range x.F32() {
			x.F32()[i] = float32(rng.Float64() - 0.5)
		}
	case dtype.C64:
		for i := range x.C64() {
			x.C64()[i] = complex(float32(rng.Float64()-0.5), float32(rng.Float64()-0.5))
		}
	}
	b.ResetTimer()
	c0 := fftCPUTime()
	for range b.N {
		if _, err := Evaluate(m, []Value{ArrayValue(x)}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((fftCPUTime()-c0)/float64(b.N)*1e3, "cpu-ms/op")
}

// fftCPUTime is the process's user+system CPU seconds (the machine is
// shared: wall time says little).
func fftCPUTime() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func BenchmarkFFTRfftRows(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = f32[2048,4096] parameter(0)\n  ROOT f = c64[2048,2049] fft(x), fft_type=RFFT, fft_length={4096}\n}\n", dtype.F32, []int64{2048, 4096})
}

func BenchmarkFFTC64Rows(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = c64[2048,4096] parameter(0)\n  ROOT f = c64[2048,4096] fft(x), fft_type=FFT, fft_length={4096}\n}\n", dtype.C64, []int64{2048, 4096})
}

func BenchmarkFFTIrfftRows(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = c64[2048,2049] parameter(0)\n  ROOT f = f32[2048,4096] fft(x), fft_type=IRFFT, fft_length={4096}\n}\n", dtype.C64, []int64{2048, 2049})
}

func BenchmarkFFT2C64(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = c64[2048,2048] parameter(0)\n  ROOT f = c64[2048,2048] fft(x), fft_type=FFT, fft_length={2048,2048}\n}\n", dtype.C64, []int64{2048, 2048})
}

func BenchmarkFFTPlanRun(b *testing.B) {
	for _, n := range []int{64, 256, 1024, 2048, 4096} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			w := fftLanes()
			pl := newFFTCPlan(n, w)
			a := make([]float64, 2*n*w)
			c := make([]float64, 2*n*w+fftPad)[fftPad:]
			for i := range a {
				a[i] = float64(i%7) - 3
			}
			b.ResetTimer()
			for range b.N {
				pl.run(a, c)
			}
			// per radix-4 butterfly of one vector (log4 n passes of n/4)
			bf := float64(n/4) * float64(log2ceil(int64(n))) / 2
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/bf, "ns/vbfly")
		})
	}
}

var fftPad = 520

func BenchmarkFFTRfft3000(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = f32[2048,3000] parameter(0)\n  ROOT f = c64[2048,1501] fft(x), fft_type=RFFT, fft_length={3000}\n}\n", dtype.F32, []int64{2048, 3000})
}

func BenchmarkFFTRfft2(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = f32[2048,2048] parameter(0)\n  ROOT f = c64[2048,1025] fft(x), fft_type=RFFT, fft_length={2048,2048}\n}\n", dtype.F32, []int64{2048, 2048})
}

func BenchmarkFFTRfft4099(b *testing.B) {
	benchFFT(b, "HloModule m\nENTRY e {\n  x = f32[512,4099] parameter(0)\n  ROOT f = c64[512,2050] fft(x), fft_type=RFFT, fft_length={4099}\n}\n", dtype.F32, []int64{512, 4099})
}
