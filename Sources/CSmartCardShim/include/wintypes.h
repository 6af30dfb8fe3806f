/* pcsc-lite includes <wintypes.h> without its PCSC/ folder; forward to it so no -I/usr/include/PCSC (and no pkg-config -pthread) is needed. */
#include <PCSC/wintypes.h>
