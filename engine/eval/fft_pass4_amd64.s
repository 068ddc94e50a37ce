//go:build goexperiment.simd && amd64

#include "textflag.h"

// fftPass4x8asm and fftPass4x4asm are fftPass4x8 / fftPass4x4 (a radix-4
// Stockham stage, fft_simd_x8_amd64.go) in assembly: the Go compiler's
// register allocation spilled the twiddles and recomputed every address,
// about three times the instructions of this loop. Same operations per
// lane, except that the pp = 0 twiddles (exactly 1) are multiplied too.
// Registers: SI/DI the batches, DX the twiddles (9 a pp: re, im, -im of
// w, w^2, w^3), R8 step, R11 3*step, R9 ostep, R14 3*ostep, BX pp,
// CX/AX the input/output value, R10 the end of the q loop.

// func fftPass4x8asm(x, y, tw *float64, m, s int)
TEXT ·fftPass4x8asm(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ tw+16(FP), DX
	MOVQ m+24(FP), R12
	MOVQ s+32(FP), R13
	MOVQ R13, R9
	SHLQ $7, R9          // ostep = s*eb
	MOVQ R9, R8
	IMULQ R12, R8          // step = s*m*eb
	LEAQ (R8)(R8*2), R11   // 3*step
	LEAQ (R9)(R9*2), R14   // 3*ostep
	XORQ BX, BX            // pp
pp8:
	CMPQ BX, R12
	JGE done8
	VBROADCASTSD 0(DX), Z16
	VBROADCASTSD 8(DX), Z17
	VBROADCASTSD 16(DX), Z18
	VBROADCASTSD 24(DX), Z19
	VBROADCASTSD 32(DX), Z20
	VBROADCASTSD 40(DX), Z21
	VBROADCASTSD 48(DX), Z22
	VBROADCASTSD 56(DX), Z23
	VBROADCASTSD 64(DX), Z24
	MOVQ BX, AX
	IMULQ R9, AX           // s*pp*eb
	LEAQ (SI)(AX*1), CX    // input
	LEAQ (DI)(AX*4), AX    // output
	LEAQ (CX)(R9*1), R10   // end of input
q8:
	VMOVUPD (CX), Z0
	VMOVUPD 64(CX), Z1
	VMOVUPD (CX)(R8*1), Z2
	VMOVUPD 64(CX)(R8*1), Z3
	VMOVUPD (CX)(R8*2), Z4
	VMOVUPD 64(CX)(R8*2), Z5
	VMOVUPD (CX)(R11*1), Z6
	VMOVUPD 64(CX)(R11*1), Z7
	VADDPD Z4, Z0, Z8
	VADDPD Z5, Z1, Z9
	VSUBPD Z4, Z0, Z10
	VSUBPD Z5, Z1, Z11
	VADDPD Z6, Z2, Z12
	VADDPD Z7, Z3, Z13
	VSUBPD Z6, Z2, Z14
	VSUBPD Z7, Z3, Z15
	VADDPD Z12, Z8, Z0
	VADDPD Z13, Z9, Z1
	VMOVUPD Z0, (AX)
	VMOVUPD Z1, 64(AX)
	VADDPD Z15, Z10, Z2   // b1r = t1r + t3i
	VSUBPD Z14, Z11, Z3   // b1i = t1i - t3r
	VSUBPD Z12, Z8, Z4    // b2 = t0 - t2
	VSUBPD Z13, Z9, Z5
	VSUBPD Z15, Z10, Z6   // b3r = t1r - t3i
	VADDPD Z14, Z11, Z7   // b3i = t1i + t3r
	VMULPD Z18, Z3, Z8
	VFMADD231PD Z16, Z2, Z8   // re = br*wr - bi*wi
	VMULPD Z16, Z3, Z9
	VFMADD231PD Z17, Z2, Z9   // im = br*wi + bi*wr
	VMOVUPD Z8, (AX)(R9*1)
	VMOVUPD Z9, 64(AX)(R9*1)
	VMULPD Z21, Z5, Z8
	VFMADD231PD Z19, Z4, Z8   // re = br*wr - bi*wi
	VMULPD Z19, Z5, Z9
	VFMADD231PD Z20, Z4, Z9   // im = br*wi + bi*wr
	VMOVUPD Z8, (AX)(R9*2)
	VMOVUPD Z9, 64(AX)(R9*2)
	VMULPD Z24, Z7, Z8
	VFMADD231PD Z22, Z6, Z8   // re = br*wr - bi*wi
	VMULPD Z22, Z7, Z9
	VFMADD231PD Z23, Z6, Z9   // im = br*wi + bi*wr
	VMOVUPD Z8, (AX)(R14*1)
	VMOVUPD Z9, 64(AX)(R14*1)
	ADDQ $128, CX
	ADDQ $128, AX
	CMPQ CX, R10
	JLT q8
	ADDQ $72, DX
	INCQ BX
	JMP pp8
done8:
	VZEROUPPER
	RET

// func fftPass4x4asm(x, y, tw *float64, m, s int)
TEXT ·fftPass4x4asm(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ tw+16(FP), DX
	MOVQ m+24(FP), R12
	MOVQ s+32(FP), R13
	MOVQ R13, R9
	SHLQ $6, R9          // ostep = s*eb
	MOVQ R9, R8
	IMULQ R12, R8          // step = s*m*eb
	LEAQ (R8)(R8*2), R11   // 3*step
	LEAQ (R9)(R9*2), R14   // 3*ostep
	XORQ BX, BX            // pp
pp4:
	CMPQ BX, R12
	JGE done4
	MOVQ BX, AX
	IMULQ R9, AX           // s*pp*eb
	LEAQ (SI)(AX*1), CX    // input
	LEAQ (DI)(AX*4), AX    // output
	LEAQ (CX)(R9*1), R10   // end of input
q4:
	VMOVUPD (CX), Y0
	VMOVUPD 32(CX), Y1
	VMOVUPD (CX)(R8*1), Y2
	VMOVUPD 32(CX)(R8*1), Y3
	VMOVUPD (CX)(R8*2), Y4
	VMOVUPD 32(CX)(R8*2), Y5
	VMOVUPD (CX)(R11*1), Y6
	VMOVUPD 32(CX)(R11*1), Y7
	VADDPD Y4, Y0, Y8
	VADDPD Y5, Y1, Y9
	VSUBPD Y4, Y0, Y10
	VSUBPD Y5, Y1, Y11
	VADDPD Y6, Y2, Y12
	VADDPD Y7, Y3, Y13
	VSUBPD Y6, Y2, Y14
	VSUBPD Y7, Y3, Y15
	VADDPD Y12, Y8, Y0
	VADDPD Y13, Y9, Y1
	VMOVUPD Y0, (AX)
	VMOVUPD Y1, 32(AX)
	VADDPD Y15, Y10, Y2   // b1r = t1r + t3i
	VSUBPD Y14, Y11, Y3   // b1i = t1i - t3r
	VSUBPD Y12, Y8, Y4    // b2 = t0 - t2
	VSUBPD Y13, Y9, Y5
	VSUBPD Y15, Y10, Y6   // b3r = t1r - t3i
	VADDPD Y14, Y11, Y7   // b3i = t1i + t3r
	VBROADCASTSD 0(DX), Y12
	VBROADCASTSD 8(DX), Y13
	VBROADCASTSD 16(DX), Y14
	VMULPD Y14, Y3, Y8
	VFMADD231PD Y12, Y2, Y8   // re = br*wr - bi*wi
	VMULPD Y12, Y3, Y9
	VFMADD231PD Y13, Y2, Y9   // im = br*wi + bi*wr
	VMOVUPD Y8, (AX)(R9*1)
	VMOVUPD Y9, 32(AX)(R9*1)
	VBROADCASTSD 24(DX), Y12
	VBROADCASTSD 32(DX), Y13
	VBROADCASTSD 40(DX), Y14
	VMULPD Y14, Y5, Y8
	VFMADD231PD Y12, Y4, Y8   // re = br*wr - bi*wi
	VMULPD Y12, Y5, Y9
	VFMADD231PD Y13, Y4, Y9   // im = br*wi + bi*wr
	VMOVUPD Y8, (AX)(R9*2)
	VMOVUPD Y9, 32(AX)(R9*2)
	VBROADCASTSD 48(DX), Y12
	VBROADCASTSD 56(DX), Y13
	VBROADCASTSD 64(DX), Y14
	VMULPD Y14, Y7, Y8
	VFMADD231PD Y12, Y6, Y8   // re = br*wr - bi*wi
	VMULPD Y12, Y7, Y9
	VFMADD231PD Y13, Y6, Y9   // im = br*wi + bi*wr
	VMOVUPD Y8, (AX)(R14*1)
	VMOVUPD Y9, 32(AX)(R14*1)
	ADDQ $64, CX
	ADDQ $64, AX
	CMPQ CX, R10
	JLT q4
	ADDQ $72, DX
	INCQ BX
	JMP pp4
done4:
	VZEROUPPER
	RET
