	.text
	.file	"scale.c"
	.globl	scale                           // -- Begin function scale
	.p2align	2
	.type	scale,@function
scale:                                  // @scale
	.cfi_startproc
// %bb.0:
	cmp	x2, #1
	b.lt	.LBB0_3
// %bb.1:
	fmov	s0, #2.00000000
	mov	x8, xzr
.LBB0_2:                                // =>This Inner Loop Header: Depth=1
	ldr	q1, [x1, x8, lsl #2]
	fmul	v1.4s, v1.4s, v0.s[0]
	str	q1, [x0, x8, lsl #2]
	add	x8, x8, #4
	cmp	x8, x2
	b.lt	.LBB0_2
.LBB0_3:
	ret
.Lfunc_end0:
	.size	scale, .Lfunc_end0-scale
	.cfi_endproc
                                        // -- End function
	.ident	"clang version 18.1.8"
	.section	".note.GNU-stack","",@progbits
	.addrsig
