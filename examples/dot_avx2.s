	.file	"dot_avx2.c"
	.text
	.p2align 4
	.globl	dot
	.type	dot, @function
dot:
.LFB0:
	.cfi_startproc
	movq	%rdi, %rcx
	testq	%rdx, %rdx
	jle	.L9
	leaq	-1(%rdx), %rax
	cmpq	$2, %rax
	jbe	.L10
	movq	%rdx, %rdi
	xorl	%eax, %eax
	vxorpd	%xmm0, %xmm0, %xmm0
	shrq	$2, %rdi
	salq	$5, %rdi
	.p2align 4,,10
	.p2align 3
.L4:
	vmovupd	(%rcx,%rax), %ymm4
	vmulpd	(%rsi,%rax), %ymm4, %ymm1
	addq	$32, %rax
	vaddsd	%xmm1, %xmm0, %xmm0
	vunpckhpd	%xmm1, %xmm1, %xmm2
	vextractf128	$0x1, %ymm1, %xmm1
	vaddsd	%xmm2, %xmm0, %xmm0
	vaddsd	%xmm1, %xmm0, %xmm0
	vunpckhpd	%xmm1, %xmm1, %xmm1
	vaddsd	%xmm1, %xmm0, %xmm0
	cmpq	%rax, %rdi
	jne	.L4
	movq	%rdx, %rax
	andq	$-4, %rax
	movq	%rax, %rdi
	cmpq	%rax, %rdx
	je	.L20
	vzeroupper
.L3:
	subq	%rdi, %rdx
	cmpq	$1, %rdx
	je	.L7
	vmovupd	(%rcx,%rdi,8), %xmm6
	vmulpd	(%rsi,%rdi,8), %xmm6, %xmm1
	vaddsd	%xmm1, %xmm0, %xmm0
	vunpckhpd	%xmm1, %xmm1, %xmm1
	vaddsd	%xmm0, %xmm1, %xmm0
	testb	$1, %dl
	je	.L1
	andq	$-2, %rdx
	addq	%rdx, %rax
.L7:
	vmovsd	(%rcx,%rax,8), %xmm5
	vfmadd231sd	(%rsi,%rax,8), %xmm5, %xmm0
	ret
	.p2align 4,,10
	.p2align 3
.L9:
	vxorpd	%xmm0, %xmm0, %xmm0
.L1:
	ret
	.p2align 4,,10
	.p2align 3
.L20:
	vzeroupper
	ret
.L10:
	xorl	%edi, %edi
	xorl	%eax, %eax
	vxorpd	%xmm0, %xmm0, %xmm0
	jmp	.L3
	.cfi_endproc
.LFE0:
	.size	dot, .-dot
	.ident	"GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
