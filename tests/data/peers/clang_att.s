	.text
	.file	"triad.c"
	.globl	triad                           # -- Begin function triad
	.p2align	4, 0x90
	.type	triad,@function
triad:                                  # @triad
	.cfi_startproc
# %bb.0:
	testq	%rcx, %rcx
	jle	.LBB0_4
# %bb.1:
	vbroadcastsd	%xmm0, %ymm0
	xorl	%eax, %eax
	.p2align	4, 0x90
.LBB0_2:                                # =>This Inner Loop Header: Depth=1
	vmulpd	(%rdx,%rax,8), %ymm0, %ymm1
	vaddpd	(%rsi,%rax,8), %ymm1, %ymm1
	vmovupd	%ymm1, (%rdi,%rax,8)
	addq	$4, %rax
	cmpq	%rcx, %rax
	jl	.LBB0_2
# %bb.3:
	vzeroupper
.LBB0_4:
	retq
.Lfunc_end0:
	.size	triad, .Lfunc_end0-triad
	.cfi_endproc
                                        # -- End function
	.ident	"clang version 18.1.8"
	.section	".note.GNU-stack","",@progbits
	.addrsig
