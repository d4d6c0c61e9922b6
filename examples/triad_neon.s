	.arch armv8-a
	.file	"triad_neon.c"
	.text
	.align	2
	.p2align 4,,11
	.global	triad
	.type	triad, %function
triad:
.LFB0:
	.cfi_startproc
	fmov	d3, d0
	cmp	x3, 0
	ble	.L1
	cmp	x3, 1
	beq	.L6
	lsr	x5, x3, 1
	mov	x4, 0
	dup	v0.2d, v0.d[0]
	lsl	x5, x5, 4
	.p2align 3,,7
.L4:
	ldr	q2, [x2, x4]
	ldr	q1, [x1, x4]
	fmla	v1.2d, v2.2d, v0.2d
	str	q1, [x0, x4]
	add	x4, x4, 16
	cmp	x4, x5
	bne	.L4
	and	x4, x3, -2
	tbz	x3, 0, .L1
.L3:
	ldr	d1, [x2, x4, lsl 3]
	ldr	d0, [x1, x4, lsl 3]
	fmadd	d0, d3, d1, d0
	str	d0, [x0, x4, lsl 3]
.L1:
	ret
.L6:
	mov	x4, 0
	b	.L3
	.cfi_endproc
.LFE0:
	.size	triad, .-triad
	.ident	"GCC: (Debian 12.2.0-14) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
