//go:build cgo && linux && amd64

// Package hostlibm calls the C library's math functions the way XLA:CPU's
// compiled code does: in a loop over a block, with the MXCSR's
// flush-to-zero and denormals-are-zero bits set (XLA runs its code that
// way), restored afterwards. It is its own package because cgo cannot share
// a package with Go assembly (engine/eval has some).
package hostlibm

/*
#cgo LDFLAGS: -lm
#include <math.h>
#include <xmmintrin.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
static const char *gt_libc_name(void) { return gnu_get_libc_version(); }
#else
static const char *gt_libc_name(void) { return "unknown"; }
#endif

enum { GT_SIN, GT_COS, GT_TAN, GT_CBRT, GT_LOG, GT_ERF, GT_POW, GT_ATAN2 };

// XLA's compiled code runs with FTZ (bit 15) and DAZ (bit 6) set.
#define GT_MXCSR_FTZ_DAZ 0x8040u

static int gt_libm_unary_f32(int op, const float *x, float *o, long n) {
	unsigned int saved = _mm_getcsr();
	_mm_setcsr(saved | GT_MXCSR_FTZ_DAZ);
	int ok = 1;
	long i;
	switch (op) {
	case GT_SIN: for (i = 0; i < n; i++) o[i] = sinf(x[i]); break;
	case GT_COS: for (i = 0; i < n; i++) o[i] = cosf(x[i]); break;
	case GT_TAN: for (i = 0; i < n; i++) o[i] = tanf(x[i]); break;
	case GT_CBRT: for (i = 0; i < n; i++) o[i] = cbrtf(x[i]); break;
	default: ok = 0;
	}
	_mm_setcsr(saved);
	return ok;
}

static int gt_libm_unary_f64(int op, const double *x, double *o, long n) {
	unsigned int saved = _mm_getcsr();
	_mm_setcsr(saved | GT_MXCSR_FTZ_DAZ);
	int ok = 1;
	long i;
	switch (op) {
	case GT_SIN: for (i = 0; i < n; i++) o[i] = sin(x[i]); break;
	case GT_COS: for (i = 0; i < n; i++) o[i] = cos(x[i]); break;
	case GT_TAN: for (i = 0; i < n; i++) o[i] = tan(x[i]); break;
	case GT_CBRT: for (i = 0; i < n; i++) o[i] = cbrt(x[i]); break;
	case GT_LOG: for (i = 0; i < n; i++) o[i] = log(x[i]); break;
	case GT_ERF: for (i = 0; i < n; i++) o[i] = erf(x[i]); break;
	default: ok = 0;
	}
	_mm_setcsr(saved);
	return ok;
}

static int gt_libm_binary_f32(int op, const float *a, const float *b, float *o, long n) {
	unsigned int saved = _mm_getcsr();
	_mm_setcsr(saved | GT_MXCSR_FTZ_DAZ);
	int ok = 1;
	long i;
	switch (op) {
	case GT_POW: for (i = 0; i < n; i++) o[i] = powf(a[i], b[i]); break;
	case GT_ATAN2: for (i = 0; i < n; i++) o[i] = atan2f(a[i], b[i]); break;
	default: ok = 0;
	}
	_mm_setcsr(saved);
	return ok;
}

static int gt_libm_binary_f64(int op, const double *a, const double *b, double *o, long n) {
	unsigned int saved = _mm_getcsr();
	_mm_setcsr(saved | GT_MXCSR_FTZ_DAZ);
	int ok = 1;
	long i;
	switch (op) {
	case GT_POW: for (i = 0; i < n; i++) o[i] = pow(a[i], b[i]); break;
	case GT_ATAN2: for (i = 0; i < n; i++) o[i] = atan2(a[i], b[i]); break;
	default: ok = 0;
	}
	_mm_setcsr(saved);
	return ok;
}
*/
import "C"

import "unsafe"

// Available reports whether the functions below call the host's libm.
const Available = true

// Name names the C library, for build reports.
func Name() string { return "libc " + C.GoString(C.gt_libc_name()) }

// Func is one libm function.
type Func int

// The functions XLA:CPU calls (per type: see engine/eval/libm.go).
const (
	Sin   Func = C.GT_SIN
	Cos   Func = C.GT_COS
	Tan   Func = C.GT_TAN
	Cbrt  Func = C.GT_CBRT
	Log   Func = C.GT_LOG
	Erf   Func = C.GT_ERF
	Pow   Func = C.GT_POW
	Atan2 Func = C.GT_ATAN2
)

// UnaryF32 sets o[i] = f(x[i]) (sinf, cosf, tanf or cbrtf) for i < len(o),
// reporting false for a function it has no f32 form of.
func UnaryF32(f Func, x, o []float32) bool {
	if len(o) == 0 {
		return true
	}
	_ = x[len(o)-1]
	return C.gt_libm_unary_f32(C.int(f), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&o[0])), C.long(len(o))) != 0
}

// UnaryF64 is UnaryF32 for sin, cos, tan, cbrt, log and erf.
func UnaryF64(f Func, x, o []float64) bool {
	if len(o) == 0 {
		return true
	}
	_ = x[len(o)-1]
	return C.gt_libm_unary_f64(C.int(f), (*C.double)(unsafe.Pointer(&x[0])), (*C.double)(unsafe.Pointer(&o[0])), C.long(len(o))) != 0
}

// BinaryF32 sets o[i] = f(a[i], b[i]) (powf or atan2f) for i < len(o).
func BinaryF32(f Func, a, b, o []float32) bool {
	if len(o) == 0 {
		return true
	}
	_, _ = a[len(o)-1], b[len(o)-1]
	return C.gt_libm_binary_f32(C.int(f), (*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])), (*C.float)(unsafe.Pointer(&o[0])), C.long(len(o))) != 0
}

// BinaryF64 is BinaryF32 for pow and atan2.
func BinaryF64(f Func, a, b, o []float64) bool {
	if len(o) == 0 {
		return true
	}
	_, _ = a[len(o)-1], b[len(o)-1]
	return C.gt_libm_binary_f64(C.int(f), (*C.double)(unsafe.Pointer(&a[0])), (*C.double)(unsafe.Pointer(&b[0])), (*C.double)(unsafe.Pointer(&o[0])), C.long(len(o))) != 0
}
