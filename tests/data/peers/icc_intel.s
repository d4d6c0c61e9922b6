# mark_description "Intel(R) C Intel(R) 64 Compiler Classic for applications running on Intel(R) 64, Version 2021.10.0 Build 2";
# mark_description "0230609_000000";
# mark_description "-O3 -xCORE-AVX2 -masm=intel -S";
	.intel_syntax noprefix
	.file "triad.c"
	.text
..TXTST0:
.L_2__routine_start_triad_0:
# -- Begin  triad
	.text
# mark_begin;
       .align    16,0x90
	.globl triad
# --- triad(double *, const double *, const double *, double, long)
triad:
# parameter 1: rdi
# parameter 2: rsi
# parameter 3: rdx
# parameter 4: xmm0
# parameter 5: rcx
..B1.1:                         # Preds ..B1.0
                                # Execution count [1.00e+00]
	.cfi_startproc
..___tag_value_triad.1:
..L2:
                                                          #2.94
        test      rcx, rcx                                      #3.25
        jle       ..B1.5        # Prob 50%                      #3.25
                                # LOE rdx rcx rbx rbp rsi rdi r12 r13 r14 r15 xmm0
..B1.2:                         # Preds ..B1.1
                                # Execution count [1.00e+00]
        vbroadcastsd ymm1, xmm0                                 #4.25
        xor       eax, eax                                      #3.5
                                # LOE rax rdx rcx rbx rbp rsi rdi r12 r13 r14 r15 ymm1
..B1.3:                         # Preds ..B1.3 ..B1.2
                                # Execution count [1.00e+06]
        vmulpd    ymm2, ymm1, YMMWORD PTR [rdx+rax*8]           #4.29
        vaddpd    ymm3, ymm2, YMMWORD PTR [rsi+rax*8]           #4.29
        vmovupd   YMMWORD PTR [rdi+rax*8], ymm3                 #4.9
        add       rax, 4                                        #3.5
        cmp       rax, rcx                                      #3.5
        jb        ..B1.3        # Prob 82%                      #3.5
                                # LOE rax rdx rcx rbx rbp rsi rdi r12 r13 r14 r15 ymm1
..B1.4:                         # Preds ..B1.3
                                # Execution count [1.00e+00]
        vzeroupper                                              #5.1
                                # LOE rbx rbp r12 r13 r14 r15
..B1.5:                         # Preds ..B1.4 ..B1.1
                                # Execution count [1.00e+00]
        ret                                                     #5.1
        .align    16,0x90
                                # LOE
	.cfi_endproc
# mark_end;
	.type	triad,@function
	.size	triad,.-triad
..LNtriad.0:
	.data
# -- End  triad
	.data
	.section .note.GNU-stack, ""
# End
