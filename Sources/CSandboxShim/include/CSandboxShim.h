#ifndef C_SANDBOX_SHIM_H
#define C_SANDBOX_SHIM_H

#include <stdint.h>

/* Confines the calling process for decoding one hostile image, before it reads a byte of it:
   every descriptor above 2 closed; RLIMIT_AS (address_space bytes), RLIMIT_CPU (cpu_seconds),
   RLIMIT_NOFILE (3: no new descriptor), RLIMIT_FSIZE (0), RLIMIT_CORE (0); PR_SET_NO_NEW_PRIVS;
   then a seccomp filter (libseccomp) that allows only what decoding needs — read and write,
   memory (never executable), futex, time, signals to itself, exit — answers EPERM to open,
   socket, connect, exec, fork and clone, and kills the process (SIGSYS) on anything else.
   The process must be single-threaded. Returns 0, or the errno of the step that failed (the
   caller must then exit without decoding). */
int CSandboxShim_confine(uint64_t address_space, uint64_t cpu_seconds);

/* Dies with its parent: PR_SET_PDEATHSIG(SIGKILL), then checks the parent is still `parent`
   (it may have died before the call). Returns 0, or -1 when the parent is gone already (the caller
   exits). */
int CSandboxShim_die_with_parent(int parent);

/* Whether this process is confined as above (/proc/self/status: Seccomp 2, NoNewPrivs 1):
   1, 0, or -1 when it cannot say. For tests. */
int CSandboxShim_confined(void);

#endif
