	.section	__TEXT,__text,regular,pure_instructions
	.build_version macos, 14, 0	sdk_version 14, 4
	.globl	_scale                          ; -- Begin function scale
	.p2align	2
_scale:                                 ; @scale
	.cfi_startproc
; %bb.0:
	cmp	x2, #1
	b.lt	LBB0_3
; %bb.1:
	fmov	s0, #2.00000000
	mov	x8, #0
LBB0_2:                                 ; =>This Inner Loop Header: Depth=1
	ldr	q1, [x1, x8, lsl #2]
	fmul.4s	v1, v1, v0[0]
	str	q1, [x0, x8, lsl #2]
	add	x8, x8, #4
	cmp	x8, x2
	b.lt	LBB0_2
LBB0_3:
	ret
	.cfi_endproc
                                        ; -- End function
.subsections_via_symbols
