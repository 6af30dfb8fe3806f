#include "CGBGBridgeCLI.h"
#include <stdio.h>

void CGBGBridgeCLI_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }
