	.arch armv8-a
	.file	"triad.c"
	.text
	.align	2
	.p2align 4,,11
	.global	triad
	.type	triad, %function
triad:
.LFB0:
	.cfi_startproc
	cmp	x3, 0
	ble	.L1
	dup	v2.2d, v0.d[0]
	lsl	x5, x3, 3
	mov	x4, 0
	.p2align 3,,7
.L3:
	ldr	q1, [x2, x4]
	ldr	q0, [x1, x4]
	fmla	v0.2d, v1.2d, v2.2d
	str	q0, [x0, x4]
	add	x4, x4, 16
	cmp	x4, x5
	bne	.L3
.L1:
	ret
	.cfi_endproc
.LFE0:
	.size	triad, .-triad
	.ident	"GCC: (GNU) 14.2.0"
	.section	.note.GNU-stack,"",@progbits
