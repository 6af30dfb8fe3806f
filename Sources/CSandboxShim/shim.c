#define _GNU_SOURCE
#include "CSandboxShim.h"
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int limit(int resource, uint64_t value) {
    struct rlimit rl = { .rlim_cur = value, .rlim_max = value };
    return setrlimit(resource, &rl) == 0 ? 0 : errno;
}

static int compare_bytes(const void *a, const void *b) {
    return (int)*(const unsigned char *)a - (int)*(const unsigned char *)b;
}

/* glibc's qsort asks sysconf(_SC_PHYS_PAGES) — the sysinfo syscall — the first time it sorts more
   than 1 KiB, and keeps the answer. ZBar sorts that much reading a QR code: sorted once here,
   before the filter, so the filter need not allow sysinfo. */
static void warm_qsort(void) {
    static unsigned char bytes[4096];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 7919u);
    qsort(bytes, sizeof bytes, 1, compare_bytes);
}

int CSandboxShim_confine(uint64_t address_space, uint64_t cpu_seconds) {
    warm_qsort();
    /* Nothing but the pipes: 0, 1, 2. */
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) {
        for (int fd = 3; fd < 1024; fd++) close(fd);
    }
    int rc;
    if ((rc = limit(RLIMIT_AS, address_space))) return rc;
    /* The soft limit sends SIGXCPU, the hard one a second later SIGKILL. */
    struct rlimit cpu = { .rlim_cur = cpu_seconds, .rlim_max = cpu_seconds + 1 };
    if (setrlimit(RLIMIT_CPU, &cpu) != 0) return errno;
    if ((rc = limit(RLIMIT_NOFILE, 3))) return rc;
    if ((rc = limit(RLIMIT_FSIZE, 0))) return rc;
    if ((rc = limit(RLIMIT_CORE, 0))) return rc;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return errno;

    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (!ctx) return ENOMEM;
    int allowed[] = {
        SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(close),
        SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
        SCMP_SYS(futex), SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction), SCMP_SYS(sigaltstack),
        SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
        SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getrandom), SCMP_SYS(sched_yield), SCMP_SYS(restart_syscall),
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0))) goto failed;
    }
    /* Memory, but never executable: no code can be made from an image's bytes. */
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)))) goto failed;
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)))) goto failed;
    /* Signals to itself only (abort() raises SIGABRT this way). */
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid())))) goto failed;
    /* A clear "no" to what a decoder has no business doing: the library that tries gets an error. */
    int refused[] = {
        SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat), SCMP_SYS(socket), SCMP_SYS(socketpair),
        SCMP_SYS(connect), SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(clone),
        SCMP_SYS(clone3), SCMP_SYS(ptrace),
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), refused[i], 0))) goto failed;
    }
    rc = seccomp_load(ctx);
failed:
    seccomp_release(ctx);
    return rc < 0 ? -rc : rc;
}

int CSandboxShim_die_with_parent(int parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return -1;
    return getppid() == (pid_t)parent ? 0 : -1;
}

int CSandboxShim_confined(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) return -1;
    char line[256];
    int seccomp = -1, nonewprivs = -1;
    while (fgets(line, sizeof line, status)) {
        if (strncmp(line, "Seccomp:", 8) == 0) seccomp = (int)strtol(line + 8, NULL, 10);
        if (strncmp(line, "NoNewPrivs:", 11) == 0) nonewprivs = (int)strtol(line + 11, NULL, 10);
    }
    fclose(status);
    if (seccomp < 0 || nonewprivs < 0) return -1;
    return seccomp == 2 && nonewprivs == 1;
}
