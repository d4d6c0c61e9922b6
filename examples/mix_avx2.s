	.file	"mix_avx2.c"
	.text
	.p2align 4
	.globl	mix
	.type	mix, @function
mix:
.LFB0:
	.cfi_startproc
	testq	%rcx, %rcx
	jle	.L14
	leaq	-1(%rcx), %rax
	cmpq	$6, %rax
	jbe	.L8
	movq	%rcx, %r8
	xorl	%eax, %eax
	shrq	$3, %r8
	salq	$5, %r8
	.p2align 4,,10
	.p2align 3
.L4:
	vmovdqu	(%rsi,%rax), %ymm3
	vmovdqu	(%rdx,%rax), %ymm2
	vpaddd	(%rsi,%rax), %ymm2, %ymm1
	vpslld	$3, %ymm3, %ymm0
	vpxor	%ymm0, %ymm1, %ymm0
	vmovdqu	%ymm0, (%rdi,%rax)
	addq	$32, %rax
	cmpq	%r8, %rax
	jne	.L4
	movq	%rcx, %rax
	andq	$-8, %rax
	movq	%rax, %r8
	cmpq	%rax, %rcx
	je	.L16
	vzeroupper
.L3:
	movq	%rcx, %r9
	subq	%r8, %r9
	leaq	-1(%r9), %r10
	cmpq	$2, %r10
	jbe	.L6
	vmovdqu	(%rsi,%r8,4), %xmm0
	vpaddd	(%rdx,%r8,4), %xmm0, %xmm1
	vpslld	$3, %xmm0, %xmm0
	vpxor	%xmm0, %xmm1, %xmm0
	vmovdqu	%xmm0, (%rdi,%r8,4)
	movq	%r9, %r8
	andq	$-4, %r8
	addq	%r8, %rax
	andl	$3, %r9d
	je	.L14
.L6:
	movl	(%rsi,%rax,4), %r9d
	movl	(%rdx,%rax,4), %r10d
	leaq	0(,%rax,4), %r8
	addl	%r9d, %r10d
	sall	$3, %r9d
	xorl	%r10d, %r9d
	movl	%r9d, (%rdi,%rax,4)
	leaq	1(%rax), %r9
	cmpq	%r9, %rcx
	jle	.L14
	movl	4(%rsi,%r8), %r9d
	movl	4(%rdx,%r8), %r10d
	addq	$2, %rax
	addl	%r9d, %r10d
	sall	$3, %r9d
	xorl	%r10d, %r9d
	movl	%r9d, 4(%rdi,%r8)
	cmpq	%rax, %rcx
	jle	.L14
	movl	8(%rsi,%r8), %eax
	movl	8(%rdx,%r8), %ecx
	addl	%eax, %ecx
	sall	$3, %eax
	xorl	%ecx, %eax
	movl	%eax, 8(%rdi,%r8)
.L14:
	ret
	.p2align 4,,10
	.p2align 3
.L16:
	vzeroupper
	ret
.L8:
	xorl	%r8d, %r8d
	xorl	%eax, %eax
	jmp	.L3
	.cfi_endproc
.LFE0:
	.size	mix, .-mix
	.ident	"GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
