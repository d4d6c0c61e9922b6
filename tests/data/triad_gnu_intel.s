	.file	"triad.c"
	.intel_syntax noprefix
	.text
	.p2align 4
	.globl	triad
	.type	triad, @function
# triad(a, b, c, s, n): a[i] = b[i] + s*c[i], the MSVC listing's code in GNU Intel syntax
triad:
.LFB0:
	.cfi_startproc
	movsxd	r9, DWORD PTR 40[rsp]
	xor	eax, eax
	test	r9, r9
	jle	.L3
	cmp	r9, 4
	jb	.L9
	lea	r10, -8[rcx+r9*8]
	lea	r11, -8[rdx+r9*8]
	cmp	rcx, r11
	ja	.L7
	cmp	r10, rdx
	jae	.L9
.L7:
	lea	r11, -8[r8+r9*8]
	cmp	rcx, r11
	ja	.L8
	cmp	r10, r8
	jae	.L9
.L8:
	mov	r10, r9
	vbroadcastsd	ymm2, xmm3
	shr	r10, 2
	.p2align 4,,10
	.p2align 3
.L4:
	vmulpd	ymm0, ymm2, YMMWORD PTR [r8+rax*8]
	vaddpd	ymm1, ymm0, YMMWORD PTR [rdx+rax*8]
	vmovupd	YMMWORD PTR [rcx+rax*8], ymm1
	add	rax, 4
	sub	r10, 1
	jne	.L4
.L9:
	cmp	rax, r9
	jge	.L3
	.p2align 4,,10
	.p2align 3
.L10:
	vmulsd	xmm0, xmm3, QWORD PTR [r8+rax*8]
	vaddsd	xmm1, xmm0, QWORD PTR [rdx+rax*8]
	vmovsd	QWORD PTR [rcx+rax*8], xmm1
	inc	rax
	cmp	rax, r9
	jl	.L10
.L3:
	vzeroupper
	ret
	.cfi_endproc
.LFE0:
	.size	triad, .-triad
	.ident	"GCC: (GNU) 14.2.0"
	.section	.note.GNU-stack,"",@progbits
