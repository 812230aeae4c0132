/* SPDX-License-Identifier: Apache-2.0 */
/* The entry points of the stand-in libnccl.so.2 that the plugin hooks, with the first instructions
   real NCCL builds have (docs/attach.md): each saves and restores what its prologue touched, then
   tail-jumps to its C body (stand_in_nccl.c), so arguments reach the body as the caller passed them.
   As in NCCL, every ncclX is a weak alias of the strong pncclX. */
        .text

        .macro ALIAS name
        .weak nccl\name
        .set nccl\name, pnccl\name
        .endm

/* NCCL 2.28.3 (Debian/Ubuntu package): endbr64; push %r15; mov %rsi,%r15; push %r14; ... */
        .p2align 4
        .globl pncclAllReduce
        .type pncclAllReduce,@function
pncclAllReduce:
        endbr64
        push %r15
        mov %rsi,%r15
        push %r14
        push %r13
        mov %rdx,%r13
        push %r12
        pop %r12
        pop %r13
        pop %r14
        pop %r15
        jmp standInAllReduce
        .size pncclAllReduce, .-pncclAllReduce
        ALIAS AllReduce

/* NCCL 2.28.9 (PyTorch's wheel): push %r15; mov %rsi,%r15; push %r14; mov %rdi,%r14; ... */
        .p2align 4
        .globl pncclGroupEnd
        .type pncclGroupEnd,@function
pncclGroupEnd:
        push %r15
        mov %rsi,%r15
        push %r14
        mov %rdi,%r14
        push %r13
        pop %r13
        pop %r14
        pop %r15
        jmp standInGroupEnd
        .size pncclGroupEnd, .-pncclGroupEnd
        ALIAS GroupEnd

/* A RIP-relative lea in the first bytes (other builds may have one): counts its calls through it. */
        .p2align 4
        .globl pncclGroupStart
        .type pncclGroupStart,@function
pncclGroupStart:
        lea standInGroupStarts(%rip),%rax
        addl $1,(%rax)
        jmp standInGroupStart
        .size pncclGroupStart, .-pncclGroupStart
        ALIAS GroupStart

/* [endbr64;] push %rbp; mov %rsp,%rbp; ...: ncclCommDestroy, ncclCommAbort, ncclGroupEnd in 2.28. */
        .p2align 4
        .globl pncclCommDestroy
        .type pncclCommDestroy,@function
pncclCommDestroy:
        endbr64
        push %rbp
        mov %rsp,%rbp
        push %rbx
        pop %rbx
        pop %rbp
        jmp standInCommDestroy
        .size pncclCommDestroy, .-pncclCommDestroy
        ALIAS CommDestroy

        .p2align 4
        .globl pncclCommAbort
        .type pncclCommAbort,@function
pncclCommAbort:
        push %rbp
        mov %rsp,%rbp
        push %rbx
        sub $8,%rsp
        add $8,%rsp
        pop %rbx
        pop %rbp
        jmp standInCommAbort
        .size pncclCommAbort, .-pncclCommAbort
        ALIAS CommAbort

        .p2align 4
        .globl pncclCommFinalize
        .type pncclCommFinalize,@function
pncclCommFinalize:
        endbr64
        push %rbp
        mov %rsp,%rbp
        push %r12
        pop %r12
        pop %rbp
        jmp standInCommFinalize
        .size pncclCommFinalize, .-pncclCommFinalize
        ALIAS CommFinalize

        .p2align 4
        .globl pncclCommRevoke
        .type pncclCommRevoke,@function
pncclCommRevoke:
        push %rbp
        mov %rsp,%rbp
        push %r12
        push %rbx
        pop %rbx
        pop %r12
        pop %rbp
        jmp standInCommRevoke
        .size pncclCommRevoke, .-pncclCommRevoke
        ALIAS CommRevoke

/* NCCL 2.31+: ncclAllReduceConfig (a stack argument: the config) and ncclGroupSimulateEnd. */
        .p2align 4
        .globl pncclAllReduceConfig
        .type pncclAllReduceConfig,@function
pncclAllReduceConfig:
        endbr64
        push %rbp
        mov %rsp,%rbp
        push %r12
        pop %r12
        pop %rbp
        jmp standInAllReduceConfig
        .size pncclAllReduceConfig, .-pncclAllReduceConfig
        ALIAS AllReduceConfig

        .p2align 4
        .globl pncclGroupSimulateEnd
        .type pncclGroupSimulateEnd,@function
pncclGroupSimulateEnd:
        push %rbp
        mov %rsp,%rbp
        push %rbx
        pop %rbx
        pop %rbp
        jmp standInGroupSimulateEnd
        .size pncclGroupSimulateEnd, .-pncclGroupSimulateEnd
        ALIAS GroupSimulateEnd

        .section .note.GNU-stack,"",@progbits
