	.file	"mix_avx2.c"
	.intel_syntax noprefix
	.text
	.p2align 4
	.globl	mix
	.type	mix, @function
mix:
.LFB0:
	.cfi_startproc
	test	rcx, rcx
	jle	.L14
	lea	rax, -1[rcx]
	cmp	rax, 6
	jbe	.L8
	mov	r8, rcx
	xor	eax, eax
	shr	r8, 3
	sal	r8, 5
	.p2align 4,,10
	.p2align 3
.L4:
	vmovdqu	ymm3, YMMWORD PTR [rsi+rax]
	vmovdqu	ymm2, YMMWORD PTR [rdx+rax]
	vpaddd	ymm1, ymm2, YMMWORD PTR [rsi+rax]
	vpslld	ymm0, ymm3, 3
	vpxor	ymm0, ymm1, ymm0
	vmovdqu	YMMWORD PTR [rdi+rax], ymm0
	add	rax, 32
	cmp	rax, r8
	jne	.L4
	mov	rax, rcx
	and	rax, -8
	mov	r8, rax
	cmp	rcx, rax
	je	.L16
	vzeroupper
.L3:
	mov	r9, rcx
	sub	r9, r8
	lea	r10, -1[r9]
	cmp	r10, 2
	jbe	.L6
	vmovdqu	xmm0, XMMWORD PTR [rsi+r8*4]
	vpaddd	xmm1, xmm0, XMMWORD PTR [rdx+r8*4]
	vpslld	xmm0, xmm0, 3
	vpxor	xmm0, xmm1, xmm0
	vmovdqu	XMMWORD PTR [rdi+r8*4], xmm0
	mov	r8, r9
	and	r8, -4
	add	rax, r8
	and	r9d, 3
	je	.L14
.L6:
	mov	r9d, DWORD PTR [rsi+rax*4]
	mov	r10d, DWORD PTR [rdx+rax*4]
	lea	r8, 0[0+rax*4]
	add	r10d, r9d
	sal	r9d, 3
	xor	r9d, r10d
	mov	DWORD PTR [rdi+rax*4], r9d
	lea	r9, 1[rax]
	cmp	rcx, r9
	jle	.L14
	mov	r9d, DWORD PTR 4[rsi+r8]
	mov	r10d, DWORD PTR 4[rdx+r8]
	add	rax, 2
	add	r10d, r9d
	sal	r9d, 3
	xor	r9d, r10d
	mov	DWORD PTR 4[rdi+r8], r9d
	cmp	rcx, rax
	jle	.L14
	mov	eax, DWORD PTR 8[rsi+r8]
	mov	ecx, DWORD PTR 8[rdx+r8]
	add	ecx, eax
	sal	eax, 3
	xor	eax, ecx
	mov	DWORD PTR 8[rdi+r8], eax
.L14:
	ret
	.p2align 4,,10
	.p2align 3
.L16:
	vzeroupper
	ret
.L8:
	xor	r8d, r8d
	xor	eax, eax
	jmp	.L3
	.cfi_endproc
.LFE0:
	.size	mix, .-mix
	.ident	"GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
