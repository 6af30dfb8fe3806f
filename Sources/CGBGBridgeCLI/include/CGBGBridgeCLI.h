#ifndef CGBGBRIDGECLI_H
#define CGBGBRIDGECLI_H
/* Makes standard output line-buffered, so progress lines reach a log file or pipe at once.
   (Swift 6 refuses to touch the C `stdout` global directly.) */
void CGBGBridgeCLI_line_buffer_stdout(void);
#endif
