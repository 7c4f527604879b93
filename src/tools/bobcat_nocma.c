/* bobcat-nocma: run a command the way a container's default seccomp profile runs it, with no way
 * for one process to read or write another's memory through the kernel.
 *
 *   bobcat-nocma [--kill] [--] command [args]
 *
 * Installs a seccomp filter (raw BPF through prctl: no libseccomp needed) that makes
 * process_vm_readv, process_vm_writev, ptrace, kcmp, pidfd_getfd and process_madvise fail with
 * EPERM — the calls Docker's and Podman's default profile keep from a container without
 * CAP_SYS_PTRACE, with the same errno (the profile's defaultErrnoRet is EPERM) — then execs the
 * command. The filter is inherited by every child and survives exec, so a launcher started under
 * it (mpirun, mpiexec, yod) runs every rank in the same sandbox. --kill makes a denied call kill
 * the process instead (SIGSYS), to find out who makes it. No privilege is needed: the process
 * sets no_new_privs first, as the kernel requires of an unprivileged filter.
 *
 * Used by tests/python/test_sandbox.py and python/bobcat/bench/sandbox.py (docs/containers.md). */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "bobcat-nocma: add this architecture's AUDIT_ARCH"
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

static const long denied[] = {SYS_process_vm_readv, SYS_process_vm_writev, SYS_ptrace, SYS_kcmp,
                              SYS_pidfd_getfd,      SYS_process_madvise};
#define NDENIED (sizeof denied / sizeof denied[0])

int main(int argc, char **argv)
{
    int i = 1, kill = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--kill")) {
            kill = 1;
            continue;
        }
        fprintf(stderr, "bobcat-nocma: unknown option %s\nusage: bobcat-nocma [--kill] [--] command [args]\n", argv[i]);
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: bobcat-nocma [--kill] [--] command [args]\n");
        return 2;
    }
    /* arch check (a foreign ABI's numbers mean other calls: refuse them all), load the number,
     * one test per denied call jumping to the deny return, else allow. */
    struct sock_filter f[4 + NDENIED + 2];
    unsigned n = 0;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (unsigned k = 0; k < NDENIED; k++) /* to the deny return: skip the rest of the tests and the allow */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)denied[k],
                                              (unsigned char)(NDENIED - k), 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, kill ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | EPERM);
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
        perror("bobcat-nocma: prctl(PR_SET_NO_NEW_PRIVS)");
        return 126;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("bobcat-nocma: prctl(PR_SET_SECCOMP) (kernel without CONFIG_SECCOMP_FILTER?)");
        return 126;
    }
    execvp(argv[i], argv + i);
    fprintf(stderr, "bobcat-nocma: cannot run %s: %s\n", argv[i], strerror(errno));
    return 127;
}
