//go:build goexperiment.simd && amd64

#include "textflag.h"

// func gemmCopyRows(dst *byte, dstride int, src *byte, sstride, rows, width int)
//
// Copies rows runs of width bytes (a multiple of 8) from src to dst, the runs
// sstride bytes apart in src and dstride bytes apart in dst. Needs AVX.
TEXT ·gemmCopyRows(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ dstride+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ sstride+24(FP), R8
	MOVQ rows+32(FP), CX
	MOVQ width+40(FP), R9
	TESTQ CX, CX
	JLE done
row:
	XORQ AX, AX
	MOVQ R9, BX
w32:
	CMPQ BX, $32
	JLT w16
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	SUBQ $32, BX
	JMP w32
w16:
	CMPQ BX, $16
	JLT w8
	VMOVUPS (SI)(AX*1), X0
	VMOVUPS X0, (DI)(AX*1)
	ADDQ $16, AX
	SUBQ $16, BX
w8:
	CMPQ BX, $8
	JLT next
	MOVQ (SI)(AX*1), DX
	MOVQ DX, (DI)(AX*1)
next:
	ADDQ R10, DI
	ADDQ R8, SI
	DECQ CX
	JNZ row
done:
	VZEROUPPER
	RET
