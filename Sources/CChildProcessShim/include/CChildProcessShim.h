#ifndef C_CHILD_PROCESS_SHIM_H
#define C_CHILD_PROCESS_SHIM_H

#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc ≥ 2.34), which Swift's Glibc module does not
/// show because it is declared only under _GNU_SOURCE. Returns 0 or an errno value.
int CChildProcessShim_addclosefrom(posix_spawn_file_actions_t *actions, int from);

/// pipe2(fds, O_CLOEXEC): a pipe whose ends never leak into programs started later.
int CChildProcessShim_pipe_cloexec(int fds[2]);

#endif
