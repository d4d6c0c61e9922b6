	.file	"dot.c"
	.text
	.p2align 4
	.globl	dot
	.type	dot, @function
dot:
.LFB0:
	.cfi_startproc
	testq	%rdx, %rdx
	jle	.L4
	xorl	%eax, %eax
	vxorpd	%xmm0, %xmm0, %xmm0
	.p2align 4,,10
	.p2align 3
.L3:
	vmovsd	(%rdi,%rax,8), %xmm1
	vfmadd231sd	(%rsi,%rax,8), %xmm1, %xmm0
	incq	%rax
	cmpq	%rax, %rdx
	jne	.L3
	ret
	.p2align 4,,10
	.p2align 3
.L4:
	vxorpd	%xmm0, %xmm0, %xmm0
	ret
	.cfi_endproc
.LFE0:
	.size	dot, .-dot
	.ident	"GCC: (GNU) 14.2.0"
	.section	.note.GNU-stack,"",@progbits
