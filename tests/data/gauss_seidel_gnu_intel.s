	.file	"gauss_seidel.c"
	.intel_syntax noprefix
	.text
	.p2align 4
	.globl	gauss_seidel
	.type	gauss_seidel, @function
# a[i][j] = 0.25 * (a[i-1][j] + a[i+1][j] + a[i][j-1] + a[i][j+1]), in place:
# the MSVC listing's code in GNU Intel syntax
gauss_seidel:
.LFB0:
	.cfi_startproc
	mov	QWORD PTR 8[rsp], rbx
	push	rdi
	lea	r11d, -1[rdx]
	mov	rdi, rcx
	movsxd	r9, r8d
	cmp	r11d, 1
	jle	.L3
	lea	ebx, -1[r8]
	movsd	xmm1, QWORD PTR .LC0[rip]
	lea	r10, [r9+r9]
	mov	ecx, 1
	.p2align 4,,10
	.p2align 3
.L4:
	cmp	ebx, 1
	jle	.L2
	lea	eax, -1[rcx]
	lea	edx, -1[rbx]
	imul	eax, r8d
	cdqe
	lea	rax, 8[rdi+rax*8]
	.p2align 4,,10
	.p2align 3
.L7:
	movsd	xmm0, QWORD PTR [rax+r10*8]
	addsd	xmm0, QWORD PTR [rax]
	addsd	xmm0, QWORD PTR -8[rax+r9*8]
	addsd	xmm0, QWORD PTR 8[rax+r9*8]
	mulsd	xmm0, xmm1
	movsd	QWORD PTR [rax+r9*8], xmm0
	add	rax, 8
	sub	rdx, 1
	jne	.L7
.L2:
	inc	ecx
	cmp	ecx, r11d
	jl	.L4
.L3:
	mov	rbx, QWORD PTR 16[rsp]
	pop	rdi
	ret
	.cfi_endproc
.LFE0:
	.size	gauss_seidel, .-gauss_seidel
	.section	.rodata.cst8,"aM",@progbits,8
	.align 8
.LC0:
	.long	0
	.long	1070596096
	.ident	"GCC: (GNU) 14.2.0"
	.section	.note.GNU-stack,"",@progbits
