/* SPDX-License-Identifier: Apache-2.0 */
/* Functions whose first bytes have the shapes the code hooks must handle or refuse (x86-64, System V).
   Each is 16-byte aligned and has its size in the symbol table, as compilers emit them. */
        .text

/* Seven arguments (the seventh on the stack), endbr64 then pushes: NCCL 2.28.3's ncclAllReduce entry.
   Returns a1 + 2*a2 + 3*a3 + 4*a4 + 5*a5 + 6*a6 + 7*a7. */
        .p2align 4
        .globl shapeSeven
        .type shapeSeven,@function
shapeSeven:
        endbr64
        push %r15
        mov %rsi,%r15
        push %r14
        lea (%rdi,%r15,2),%rax
        lea (%rdx,%rdx,2),%r14
        add %r14,%rax
        lea (%rax,%rcx,4),%rax
        lea (%r8,%r8,4),%r14
        add %r14,%rax
        imul $6,%r9,%r14
        add %r14,%rax
        mov 24(%rsp),%r14
        imul $7,%r14,%r14
        add %r14,%rax
        pop %r14
        pop %r15
        ret
        .size shapeSeven, .-shapeSeven
/* A second name at the same address, as NCCL's ncclX is a weak alias of pncclX. */
        .weak shapeSevenAlias
        .set shapeSevenAlias, shapeSeven

/* A RIP-relative lea in the first bytes: moved, its displacement must be re-aimed. Returns x + 40000. */
        .p2align 4
        .globl shapeRipLea
        .type shapeRipLea,@function
shapeRipLea:
        lea shapeValue(%rip),%rax
        mov (%rax),%rax
        add %rdi,%rax
        ret
        .size shapeRipLea, .-shapeRipLea

/* Shorter than the jump. */
        .p2align 4
        .globl shapeTiny
        .type shapeTiny,@function
shapeTiny:
        mov %rdi,%rax
        ret
        .size shapeTiny, .-shapeTiny

/* A loop whose branch lands at +3, inside the bytes a hook would move. Returns max(x, 1). */
        .p2align 4
        .globl shapeBranchInto
        .type shapeBranchInto,@function
shapeBranchInto:
        push %rbx
        xor %eax,%eax
1:      add $1,%eax
        cmp %edi,%eax
        jl 1b
        pop %rbx
        ret
        .size shapeBranchInto, .-shapeBranchInto

/* Starts with a jump (a tail call), which cannot be moved. */
        .p2align 4
        .globl shapeJumpFirst
        .type shapeJumpFirst,@function
shapeJumpFirst:
        jmp shapeTinyLocal
        nop
        nop
        nop
        nop
        ret
shapeTinyLocal:
        mov %rdi,%rax
        ret
        .size shapeJumpFirst, .-shapeJumpFirst

/* Slow first instructions (two divisions), so that a thread calling it in a loop is often caught in
   the middle of the bytes a hook moves. Call as shapeSlow(x, 1, 0); returns x. */
        .p2align 4
        .globl shapeSlow
        .type shapeSlow,@function
shapeSlow:
        push %rbx
        div %rsi
        div %rsi
        mov %rdi,%rax
        pop %rbx
        ret
        .size shapeSlow, .-shapeSlow

/* Starts 12 bytes into a 16-byte window, as some of NCCL 2.28.9's entry points do: the jump straddles
   two windows. Returns x + 3. */
        .p2align 4
        .skip 12, 0x90
        .globl shapeStraddle
        .type shapeStraddle,@function
shapeStraddle:
        push %rbp
        mov %rsp,%rbp
        lea 3(%rdi),%rax
        pop %rbp
        ret
        .size shapeStraddle, .-shapeStraddle


/* Starts 15 bytes into a 16-byte window: only the jump's opcode lies in the first one. Returns x + 3. */
        .p2align 4
        .skip 15, 0x90
        .globl shapeStraddleLast
        .type shapeStraddleLast,@function
shapeStraddleLast:
        push %rbp
        mov %rsp,%rbp
        lea 3(%rdi),%rax
        pop %rbp
        ret
        .size shapeStraddleLast, .-shapeStraddleLast

/* A load from the pointer in its second instruction, inside the moved bytes: a caller whose pointer
   faults is stopped there by SIGSEGV, its context saved in a signal frame. Returns *p. */
        .p2align 4
        .globl shapeLoadSecond
        .type shapeLoadSecond,@function
shapeLoadSecond:
        push %rbx
        mov (%rdi),%rax
        pop %rbx
        nop
        ret
        .size shapeLoadSecond, .-shapeLoadSecond

/* One 5-byte instruction is all the hook moves: no thread can ever be inside the moved bytes, only
   before or past them, so only the atomicity of the write matters. Its immediate makes any mix of old
   and new bytes a jump a gigabyte away. Returns x + 0x40000007. */
        .p2align 4
        .globl shapeOneInstruction
        .type shapeOneInstruction,@function
shapeOneInstruction:
        mov $0x40000007,%eax
        add %edi,%eax
        ret
        .size shapeOneInstruction, .-shapeOneInstruction

/* The same, 12 bytes into a window: the jump straddles two windows. Returns x + 0x40000007. */
        .p2align 4
        .skip 12, 0x90
        .globl shapeOneInstructionStraddle
        .type shapeOneInstructionStraddle,@function
shapeOneInstructionStraddle:
        mov $0x40000007,%eax
        add %edi,%eax
        ret
        .size shapeOneInstructionStraddle, .-shapeOneInstructionStraddle

        .data
        .p2align 3
shapeValue:
        .quad 40000

        .section .note.GNU-stack,"",@progbits
