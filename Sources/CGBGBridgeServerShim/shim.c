#include "CGBGBridgeServerShim.h"
#include <malloc.h>

int CGBGBridgeServerShim_release_free_heap(void) {
#ifdef __GLIBC__
    return malloc_trim(0);
#else
    return 0;
#endif
}
