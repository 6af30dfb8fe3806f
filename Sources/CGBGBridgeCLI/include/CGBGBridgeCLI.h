#ifndef CGBGBRIDGECLI_H
#define CGBGBRIDGECLI_H
#include <stddef.h>

/* Line-buffers standard output (a pipe too), so progress lines appear as they are printed. */
void CGBGBridgeCLI_line_buffer_stdout(void);

/* current (SWIFT_BACKTRACE, may be NULL) with the settings that keep memory and registers out of a
   crash report added where it does not set them; returns the length written to out. */
size_t CGBGBridgeCLI_safe_backtrace_settings(const char *current, char *out, size_t size);
#endif
