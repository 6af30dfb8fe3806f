#ifndef C_FILE_SWAP_SHIM_H
#define C_FILE_SWAP_SHIM_H

/* Exchanges two paths (files or directories) in one step: renameat2(RENAME_EXCHANGE), which glibc
   declares only under _GNU_SOURCE. After it, each path names what the other did; there is no
   moment when either path is missing. Returns 0 or an errno value. */
int CFileSwapShim_exchange(const char *a, const char *b);

#endif
