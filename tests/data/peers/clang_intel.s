	.text
	.intel_syntax noprefix
	.file	"triad.c"
	.globl	triad                           # -- Begin function triad
	.p2align	4, 0x90
	.type	triad,@function
triad:                                  # @triad
	.cfi_startproc
# %bb.0:
	test	rcx, rcx
	jle	.LBB0_4
# %bb.1:
	vbroadcastsd	ymm0, xmm0
	xor	eax, eax
	.p2align	4, 0x90
.LBB0_2:                                # =>This Inner Loop Header: Depth=1
	vmulpd	ymm1, ymm0, ymmword ptr [rdx + 8*rax]
	vaddpd	ymm1, ymm1, ymmword ptr [rsi + 8*rax]
	vmovupd	ymmword ptr [rdi + 8*rax], ymm1
	add	rax, 4
	cmp	rax, rcx
	jl	.LBB0_2
# %bb.3:
	vzeroupper
.LBB0_4:
	ret
.Lfunc_end0:
	.size	triad, .Lfunc_end0-triad
	.cfi_endproc
                                        # -- End function
	.ident	"clang version 18.1.8"
	.section	".note.GNU-stack","",@progbits
	.addrsig
