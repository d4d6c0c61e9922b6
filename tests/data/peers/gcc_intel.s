	.file	"scale.c"
	.intel_syntax noprefix
	.text
	.p2align 4
	.globl	scale
	.type	scale, @function
scale:
.LFB0:
	.cfi_startproc
	test	rdx, rdx
	jle	.L1
	vbroadcastss	ymm1, DWORD PTR .LC0[rip]
	xor	eax, eax
	.p2align 4,,10
	.p2align 3
.L3:
	vmulps	ymm0, ymm1, YMMWORD PTR [rsi+rax*4]
	vmovups	YMMWORD PTR [rdi+rax*4], ymm0
	add	rax, 8
	cmp	rax, rdx
	jl	.L3
	vzeroupper
.L1:
	ret
	.cfi_endproc
.LFE0:
	.size	scale, .-scale
	.section	.rodata.cst4,"aM",@progbits,4
	.align 4
.LC0:
	.long	1077936128
	.ident	"GCC: (GNU) 14.2.0"
	.section	.note.GNU-stack,"",@progbits
