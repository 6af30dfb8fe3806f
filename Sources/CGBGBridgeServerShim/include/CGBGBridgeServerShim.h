#ifndef CGBGBRIDGESERVERSHIM_H
#define CGBGBRIDGESERVERSHIM_H

/// Returns freed heap memory at the top and in the middle of the arenas to the system
/// (glibc's malloc_trim(0), which Swift's Glibc module does not export). Returns 1 when memory
/// was released.
int CGBGBridgeServerShim_release_free_heap(void);

#endif
