// LD_PRELOAD shim that makes a process see an AVX2+FMA CPU on an AVX-512 machine.
//
// Why: XLA:CPU's LLVM code obeys --xla_cpu_max_isa=AVX2, but its YNNPACK, XNNPACK and
// oneDNN kernels pick their ISA from CPUID themselves and keep running AVX-512 (and AMX,
// VNNI) code. To compare against XLA as it runs on an AVX2-only machine (the AMD EPYCs
// goldtrace is judged on), every CPUID in the process must answer as that machine would.
//
// How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, x86 "cpuid_fault" flag) makes
// the CPUID instruction raise SIGSEGV. The handler turns faulting off for the thread,
// executes the real CPUID, clears the AVX-512/AMX/VNNI feature bits, turns faulting back
// on and steps over the instruction. The setting is per thread and inherited by threads
// created later, so the constructor enables it before the program starts any.
//
// Our handler must stay the one the kernel calls even after a runtime installs its own
// (Go does, and its code runs CPUID too: a fault there would reach Go's handler, which
// treats it as a crash). So the shim interposes sigaction for SIGSEGV: installers see and
// replace an "inner" handler, which ours calls for every fault that is not a CPUID, with
// the same arguments, so real crashes still reach whoever asked for them.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define ARCH_GET_CPUID 0x1011
#define ARCH_SET_CPUID 0x1012

// What the program believes is installed for SIGSEGV; guarded by nothing, since programs
// install their fault handlers at startup, before they have threads that fault.
static struct sigaction inner_segv;

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction(void) {
    static sigaction_fn fn;
    if (!fn) fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return fn;
}

int sigaction(int sig, const struct sigaction *action, struct sigaction *old) {
    if (sig != SIGSEGV) return real_sigaction()(sig, action, old);
    if (old) *old = inner_segv;
    if (action) inner_segv = *action;
    return 0;
}

static long set_cpuid_allowed(int allowed) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, allowed); }

static void clear_avx512_family(uint32_t leaf, uint32_t subleaf, uint32_t regs[4]) {
    enum { EAX, EBX, ECX, EDX };
    if (leaf == 7 && subleaf == 0) {
        // EBX: avx512f 16, dq 17, ifma 21, pf 26, er 27, cd 28, bw 30, vl 31.
        regs[EBX] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                       (1u << 30) | (1u << 31));
        // ECX: vbmi 1, vbmi2 6, vnni 11, bitalg 12, vpopcntdq 14.
        regs[ECX] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        // EDX: 4vnniw 2, 4fmaps 3, vp2intersect 8, amx-bf16 22, avx512-fp16 23, amx-tile 24,
        // amx-int8 25.
        regs[EDX] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) |
                       (1u << 25));
    } else if (leaf == 7 && subleaf == 1) {
        // EAX: avx-vnni 4, avx512-bf16 5, amx-fp16 21, avx-ifma 23; EDX: avx-vnni-int8 4,
        // avx-ne-convert 5, amx-complex 8, avx-vnni-int16 10, avx10 19.
        regs[EAX] &= ~((1u << 4) | (1u << 5) | (1u << 21) | (1u << 23));
        regs[EDX] &= ~((1u << 4) | (1u << 5) | (1u << 8) | (1u << 10) | (1u << 19));
    } else if (leaf == 0xd && subleaf == 0) {
        // XSAVE state components 5-7 (opmask, ZMM_Hi256, Hi16_ZMM) and 17-18 (AMX tiles).
        regs[EAX] &= ~((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18));
    } else if (leaf == 0x1d || leaf == 0x1e || leaf == 0x24) {
        // AMX tile and AVX10 description leaves.
        regs[EAX] = regs[EBX] = regs[ECX] = regs[EDX] = 0;
    }
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    greg_t *gregs = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)gregs[REG_RIP];
    if (ip[0] == 0x0f && ip[1] == 0xa2) {
        uint32_t leaf = (uint32_t)gregs[REG_RAX], subleaf = (uint32_t)gregs[REG_RCX];
        uint32_t regs[4];
        set_cpuid_allowed(1);
        __asm__ volatile("cpuid" : "=a"(regs[0]), "=b"(regs[1]), "=c"(regs[2]), "=d"(regs[3])
                         : "a"(leaf), "c"(subleaf));
        set_cpuid_allowed(0);
        clear_avx512_family(leaf, subleaf, regs);
        gregs[REG_RAX] = regs[0];
        gregs[REG_RBX] = regs[1];
        gregs[REG_RCX] = regs[2];
        gregs[REG_RDX] = regs[3];
        gregs[REG_RIP] += 2;
        return;
    }
    if (inner_segv.sa_flags & SA_SIGINFO) {
        inner_segv.sa_sigaction(sig, info, context);
        return;
    }
    if (inner_segv.sa_handler != SIG_DFL && inner_segv.sa_handler != SIG_IGN) {
        inner_segv.sa_handler(sig);
        return;
    }
    // Default action: restore it and return, so the faulting instruction runs again and
    // the process dies of the real signal (with its core dump).
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    real_sigaction()(SIGSEGV, &default_action, NULL);
}

__attribute__((constructor)) static void mask_avx512_from_cpuid(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigfillset(&action.sa_mask);
    if (real_sigaction()(SIGSEGV, &action, &inner_segv) != 0 || set_cpuid_allowed(0) != 0) {
        fprintf(stderr, "cpuid_avx2only: this kernel or CPU has no CPUID faulting; AVX-512 stays visible\n");
        exit(3);
    }
}
